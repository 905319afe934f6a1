#include "tests/common/multiproc.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace c10d {
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
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
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

std::string uniqueTempPath(const std::string& tag) {
  static std::atomic<int> counter{0};
  const char* dir = std::getenv("TMPDIR");
  std::ostringstream ss;
  ss << (dir && *dir ? dir : "/tmp") << "/c10d-test-" << getpid() << "-" << counter++ << "-" << tag;
  return ss.str();
}

}  // namespace test
}  // namespace c10d
