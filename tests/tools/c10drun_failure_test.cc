// c10drun: failures, stopping, signals, restarts, and workers dying with the launcher. Every test
// runs the real launcher binary on the real worker program (c10drun_test_worker) and bounds its
// wall time: workers sleep 60 s, so a launcher that does not stop them fails the time checks.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "c10d/base/abi.h"
#include "tests/tools/launcher_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

void expectAllGone(const std::vector<int>& pids) {
  for (int pid : pids) {
    // Reaped by the launcher before it exited; at most a moment for init after a SIGKILL.
    for (int i = 0; i < 300 && processAlive(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_FALSE(processAlive(pid)) << "worker pid " << pid << " outlived the launcher";
  }
}

TEST(C10drunFailure, FailingRankIsNamedAndOthersStopPromptly) {
  LauncherRun run = runLauncher(
      {"--nproc-per-node", "3", "--grace-period-s", "30", workerPath(), "fail", "2", "3", "60"});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 3) << run.describe();
  EXPECT_NE(run.err.find("c10drun: rank 2 (pid "), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find(") failed: exited with code 3"), std::string::npos) << run.describe();
  // The sleepers took SIGTERM: no waiting for the 30 s grace period, let alone their 60 s
  // (the margin is for sanitizer builds on a loaded machine).
  EXPECT_LT(run.seconds, 15.0) << run.describe();
  EXPECT_EQ(run.err.find("SIGKILL"), std::string::npos) << run.describe();
  expectAllGone(numbersAfter(run.out, "pid"));
}

TEST(C10drunFailure, RankKilledBySignalIsNamed) {
  LauncherRun run = runLauncher({"--nproc-per-node", "2", "--grace-period-s", "30", workerPath(),
                                 "raise", "1", std::to_string(SIGKILL)});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 1) << run.describe();
  EXPECT_NE(run.err.find(") failed: killed by signal 9 (SIGKILL)"), std::string::npos)
      << run.describe();
  EXPECT_NE(run.err.find("c10drun: rank 1 (pid "), std::string::npos) << run.describe();
  EXPECT_LT(run.seconds, 15.0) << run.describe();
}

TEST(C10drunFailure, WorkerIgnoringSigtermIsKilledAfterGracePeriod) {
  char dir[] = "/tmp/c10drun-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  LauncherRun run = runLauncher({"--nproc-per-node", "3", "--grace-period-s", "0.5", workerPath(),
                                 "ignore-term", "0", "4", dir});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 4) << run.describe();
  EXPECT_NE(run.err.find("c10drun: rank 0 (pid "), std::string::npos) << run.describe();
  for (int r : {1, 2}) {
    EXPECT_NE(run.err.find("c10drun: rank " + std::to_string(r) + " (pid "), std::string::npos);
  }
  EXPECT_EQ(countOf(run.err, "still running 0.5 s after SIGTERM; sending SIGKILL"), 2)
      << run.describe();
  EXPECT_GE(run.seconds, 0.5) << run.describe();
  EXPECT_LT(run.seconds, 15.0) << run.describe();
  expectAllGone(numbersAfter(run.out, "pid"));
  for (int r = 0; r < 3; ++r) unlink((std::string(dir) + "/ready" + std::to_string(r)).c_str());
  rmdir(dir);
}

class C10drunSignal : public ::testing::TestWithParam<int> {};

TEST_P(C10drunSignal, IsForwardedToEveryWorker) {
  const int sig = GetParam();
  const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  bool sent = false;
  LauncherHooks hooks;
  hooks.onOutput = [&](pid_t pid, const std::string& out, const std::string&) {
    if (!sent && countOf(out, "ready ") == 3) {
      kill(pid, sig);
      sent = true;
    }
  };
  LauncherRun run =
      runLauncher({"--nproc-per-node", "3", "--grace-period-s", "30", workerPath(), "trap"}, hooks);
  ASSERT_TRUE(sent) << run.describe();
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 128 + sig) << run.describe();
  EXPECT_NE(run.err.find(std::string("received ") + name), std::string::npos) << run.describe();
  for (int r = 0; r < 3; ++r) {
    std::string line = "[rank" + std::to_string(r) + "]: got " + name + "\n";
    EXPECT_NE(run.out.find(line), std::string::npos) << line << run.describe();
  }
  EXPECT_LT(run.seconds, 15.0) << run.describe();  // workers exited by themselves, no grace wait
  expectAllGone(numbersAfter(run.out, "ready"));
}

INSTANTIATE_TEST_SUITE_P(Signals, C10drunSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SIGINT ? "SIGINT" : "SIGTERM";
                         });

TEST(C10drunSignalTwice, SecondSignalKillsWorkersWithoutWaitingForGrace) {
  int sent = 0;
  LauncherHooks hooks;
  hooks.onOutput = [&](pid_t pid, const std::string& out, const std::string& err) {
    if (sent == 0 && countOf(out, "ready ") == 2) {
      kill(pid, SIGTERM);
      sent = 1;
    } else if (sent == 1 && err.find("received SIGTERM") != std::string::npos) {
      kill(pid, SIGTERM);  // the workers ignore the first; the second must not wait 30 s
      sent = 2;
    }
  };
  LauncherRun run = runLauncher(
      {"--nproc-per-node", "2", "--grace-period-s", "30", workerPath(), "ignore-all"}, hooks);
  ASSERT_EQ(sent, 2) << run.describe();
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 128 + SIGTERM) << run.describe();
  EXPECT_LT(run.seconds, 15.0) << run.describe();
  expectAllGone(numbersAfter(run.out, "ready"));
}

TEST(C10drunRestart, SucceedsAfterTwoRestartsWithExactlyThreeAttempts) {
  LauncherRun run = runLauncher({"--nproc-per-node", "2", "--max-restarts", "2", "--grace-period-s",
                                 "30", workerPath(), "fail-until", "2", "5"});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 0) << run.describe();
  // Rank 0 always prints before deciding; exactly attempts 0, 1, 2 in order.
  EXPECT_EQ(countOf(run.out, "[rank0]: attempt "), 3) << run.describe();
  size_t a0 = run.out.find("[rank0]: attempt 0 rank 0\n");
  size_t a1 = run.out.find("[rank0]: attempt 1 rank 0\n");
  size_t a2 = run.out.find("[rank0]: attempt 2 rank 0\n");
  ASSERT_NE(a0, std::string::npos) << run.describe();
  ASSERT_NE(a1, std::string::npos) << run.describe();
  ASSERT_NE(a2, std::string::npos) << run.describe();
  EXPECT_LT(a0, a1);
  EXPECT_LT(a1, a2);
  EXPECT_NE(run.out.find("[rank1]: attempt 2 rank 1\n"), std::string::npos) << run.describe();
  EXPECT_EQ(countOf(run.err, ") failed: exited with code 5"), 2) << run.describe();
  EXPECT_NE(run.err.find("restarting the local worker group (restart 1 of 2)"), std::string::npos);
  EXPECT_NE(run.err.find("restarting the local worker group (restart 2 of 2)"), std::string::npos);
  EXPECT_LT(run.seconds, 15.0) << run.describe();
}

TEST(C10drunRestart, ExhaustedRestartsExitNonZero) {
  LauncherRun run = runLauncher({"--nproc-per-node", "2", "--max-restarts", "1", "--grace-period-s",
                                 "30", workerPath(), "fail-until", "5", "7"});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 7) << run.describe();
  EXPECT_EQ(countOf(run.out, "[rank0]: attempt "), 2) << run.describe();
  EXPECT_EQ(countOf(run.err, "restarting the local worker group"), 1) << run.describe();
  EXPECT_NE(run.err.find("no restarts left (--max-restarts 1); exiting with code 7"),
            std::string::npos)
      << run.describe();
  EXPECT_LT(run.seconds, 15.0) << run.describe();
}

TEST(C10drunLifetime, WorkersDieWhenLauncherIsKilled) {
  std::vector<int> pids;
  LauncherHooks hooks;
  hooks.onOutput = [&](pid_t pid, const std::string& out, const std::string&) {
    if (pids.empty() && countOf(out, "ready ") == 2) {
      pids = numbersAfter(out, "ready");
      kill(pid, SIGKILL);  // no chance to clean up: only PR_SET_PDEATHSIG saves us
    }
  };
  LauncherRun run = runLauncher({"--nproc-per-node", "2", workerPath(), "pid"}, hooks);
  ASSERT_FALSE(run.exited) << run.describe();
  EXPECT_EQ(run.signal, SIGKILL);
  ASSERT_EQ(pids.size(), 2u) << run.describe();
  expectAllGone(pids);
}

TEST(C10drunLifetime, StragglersOfAnExitedWorkerNeitherHangNorSurvive) {
  // The worker exits 0 at once, leaving a grandchild that holds its stdout open.
  LauncherRun run = runLauncher({"--nproc-per-node", "2", "--grace-period-s", "30", "/bin/sh", "-c",
                                 "sleep 60 & echo bg $!; echo done"});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exitCode, 0) << run.describe();
  EXPECT_EQ(countOf(run.out, "]: done\n"), 2) << run.describe();
  EXPECT_LT(run.seconds, 15.0) << run.describe();
  std::vector<int> stragglers = numbersAfter(run.out, "bg");
  EXPECT_EQ(stragglers.size(), 2u) << run.describe();
  expectAllGone(stragglers);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
