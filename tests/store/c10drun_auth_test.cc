// c10drun and the TCPStore secret, end to end: workers launched by c10drun rendezvous through
// env:// with authentication on (a fresh secret per single-node job), a client without the
// secret is refused, a secret the user set is passed through, an empty one turns it off.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/store/tcp_store_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using test::ScopedEnv;

// Runs `c10drun ARGS...` with stdout and stderr captured together; returns its exit code.
int runC10drun(const std::vector<std::string>& args, std::string* output) {
  int out[2];
  if (pipe(out) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    std::string launcher = C10DRUN_PATH;
    argv.push_back(launcher.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(launcher.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) output->append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether `text` holds a run of 64 lowercase hex digits (what a generated secret looks like).
bool hasHexRun(const std::string& text) {
  size_t run = 0;
  for (char ch : text) {
    const bool hex = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
    run = hex ? run + 1 : 0;
    if (run >= 64) return true;
  }
  return false;
}

std::string launch(int nproc, const std::vector<std::string>& workerArgs, int* code) {
  std::vector<std::string> args = {"--nproc-per-node", std::to_string(nproc), "--standalone",
                                   WORKER_PATH};
  args.insert(args.end(), workerArgs.begin(), workerArgs.end());
  std::string out;
  *code = runC10drun(args, &out);
  return out;
}

TEST(C10drunAuthTest, StandaloneJobRendezvousesWithAuthentication) {
  ScopedEnv unset("C10D_STORE_SECRET", nullptr);
  int code = -1;
  const std::string out = launch(3, {}, &code);
  ASSERT_EQ(code, 0) << out;
  for (int r = 0; r < 3; ++r) {
    const std::string refused = r == 1 ? "yes" : "skipped";
    EXPECT_NE(out.find("[rank" + std::to_string(r) + "]: rank " + std::to_string(r) +
                       " auth=on secret=generated refused=" + refused + " intruder=out ok"),
              std::string::npos)
        << out;
  }
  // The secret is never printed (by the launcher, the store or the workers).
  EXPECT_FALSE(hasHexRun(out)) << out;
}

TEST(C10drunAuthTest, UserSecretIsPassedThroughAndEmptyTurnsItOff) {
  int code = -1;
  {
    ScopedEnv given("C10D_STORE_SECRET", "the-users-own-secret");
    const std::string out = launch(2, {"the-users-own-secret"}, &code);
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find("rank 1 auth=on secret=given refused=yes intruder=out ok"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("the-users-own-secret"), std::string::npos) << out;
  }
  {
    ScopedEnv off("C10D_STORE_SECRET", "");
    const std::string out = launch(2, {}, &code);
    ASSERT_EQ(code, 0) << out;
    // No secret anywhere: today's protocol, which lets the intruder in (the control).
    EXPECT_NE(out.find("rank 1 auth=off secret=none refused=no intruder=in ok"), std::string::npos)
        << out;
  }
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
