#include "tests/common/multiproc.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

std::string RankResult::describe() const {
  std::ostringstream ss;
  ss << "rank " << rank << ": ";
  if (timedOut) {
    ss << "hung (killed by the harness at the deadline)";
  } else if (exited) {
    ss << "exited with code " << exitCode;
    if (exitCode == 1) ss << " (assertion failed)";
    if (exitCode == 2) ss << " (exception)";
  } else {
    ss << "killed by signal " << signal << " (" << strsignal(signal) << ")";
  }
  return ss.str();
}

double testTimeoutScale() {
  static const double scale = [] {
    const char* v = std::getenv("C10D_TEST_TIMEOUT_SCALE");
    if (v != nullptr && *v != '\0') {
      char* end = nullptr;
      const double x = std::strtod(v, &end);
      if (end != v && *end == '\0' && x > 0 && x <= 1000) return x;
      std::fprintf(stderr, "C10D_TEST_TIMEOUT_SCALE='%s' is not a number in (0, 1000]; using %g\n",
                   v, static_cast<double>(C10D_TEST_TIMEOUT_SCALE_DEFAULT));
    }
    return static_cast<double>(C10D_TEST_TIMEOUT_SCALE_DEFAULT);
  }();
  return scale;
}

std::chrono::milliseconds scaledTimeout(std::chrono::milliseconds t) {
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(t.count()) * testTimeoutScale()));
}

std::vector<RankResult> runRanks(int size, const std::function<void(int, int)>& fn,
                                 const MultiProcOptions& options) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<int> pids(size, -1);
  for (int r = 0; r < size; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork failed for rank " << r;
      break;
    }
    if (pid == 0) {
      int code = 0;
      try {
        fn(r, size);
        if (::testing::Test::HasFailure()) code = 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[rank %d] exception: %s\n", r, e.what());
        code = 2;
      } catch (...) {
        std::fprintf(stderr, "[rank %d] unknown exception\n", r);
        code = 2;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids[r] = pid;
  }
  if (options.afterFork) options.afterFork(pids);

  std::vector<RankResult> results(size);
  const auto deadline = std::chrono::steady_clock::now() + scaledTimeout(options.timeout);
  int remaining = 0;
  for (int r = 0; r < size; ++r) {
    results[r].rank = r;
    if (pids[r] > 0) ++remaining;
  }
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < size; ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        if (WIFEXITED(status)) {
          results[r].exited = true;
          results[r].exitCode = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
          results[r].signal = WTERMSIG(status);
        }
        pids[r] = -1;
        --remaining;
        progressed = true;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < size; ++r) {
        if (pids[r] <= 0) continue;
        kill(pids[r], SIGKILL);
        int status = 0;
        waitpid(pids[r], &status, 0);
        results[r].timedOut = true;
        results[r].signal = SIGKILL;
        pids[r] = -1;
      }
      break;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return results;
}

void expectAllRanksOk(int size, const std::function<void(int, int)>& fn,
                      const MultiProcOptions& options) {
  for (const auto& r : runRanks(size, fn, options)) {
    EXPECT_TRUE(r.ok()) << r.describe();
  }
}

namespace {

pid_t tempDirOwner = 0;
std::string* tempDir = nullptr;

void removeTempDir() {
  // Only the process that made it: forked ranks leave through _exit, but a child that calls
  // exit() must not delete the directory its siblings still use.
  if (tempDir == nullptr || getpid() != tempDirOwner) return;
  std::error_code ec;
  std::filesystem::remove_all(*tempDir, ec);
}

}  // namespace

std::string uniqueTempPath(const std::string& tag) {
  // One fresh directory per test process (mkdtemp), removed at exit. A name built from the pid
  // alone is not enough: pids wrap (pid_max is 32768 here) over a CI run that forks thousands of
  // ranks, and a store file left by an earlier test with the same pid then hands this test stale
  // keys (seen in CI: ranks 0-3 of a new group read a finished group's instance counter).
  static std::mutex mu;
  static std::atomic<int> counter{0};
  std::lock_guard<std::mutex> lock(mu);
  if (tempDir == nullptr || tempDirOwner != getpid()) {
    const char* dir = std::getenv("TMPDIR");
    std::string templ = std::string(dir && *dir ? dir : "/tmp") + "/c10d-test-" +
                        std::to_string(getpid()) + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      throw std::runtime_error("uniqueTempPath: mkdtemp(" + templ +
                               ") failed: " + std::strerror(errno));
    }
    const bool first = tempDir == nullptr;
    if (first) tempDir = new std::string();
    *tempDir = buf.data();
    tempDirOwner = getpid();
    if (first) std::atexit(removeTempDir);
  }
  return *tempDir + "/" + std::to_string(counter++) + "-" + tag;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
