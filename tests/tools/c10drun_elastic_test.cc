// c10drun's dynamic rendezvous (--rdzv-backend c10d), end to end: several real launchers on this
// host, each faking a node with its own --local-addr (127.0.0.N: all of 127/8 is loopback), all
// running elastic_test_worker, which trains by allreduce steps from a checkpoint and checks every
// result against the world size of its round. The first launcher hosts the rendezvous TCPStore;
// nodes are killed, added, left out; every wait is bounded (runLauncher's deadline, then SIGKILL).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "c10d/base/abi.h"
#include "tests/store/store_servers.h"
#include "tests/tools/launcher_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Fast timeouts so that each scenario takes seconds: a node is dead after 1 s of silence. The
// last call (2 s) leaves a node that starts late on a loaded machine time to join the round.
constexpr const char* kFastConf =
    "join_timeout=30,last_call_timeout=2,close_timeout=10,keep_alive_interval=0.2,"
    "keep_alive_max_attempt=5";

std::string elasticWorker() {
  return ELASTIC_WORKER_PATH;
}

// A scratch directory (mkdtemp), removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/c10drun-elastic-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    for (const char* f : {"step", "step.tmp", "log"}) unlink((path_ + "/" + f).c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A port free on loopback a moment ago (the first launcher binds it right after).
int freePortNow() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// One launcher ("node") run on a thread of its own.
class Node {
 public:
  Node(std::vector<std::string> args, milliseconds timeout) {
    thread_ = std::thread([this, args = std::move(args), timeout] {
      LauncherHooks hooks;
      hooks.timeout = timeout;
      hooks.onOutput = [this](pid_t pid, const std::string& out, const std::string& err) {
        std::lock_guard<std::mutex> lock(mu_);
        pid_ = pid;
        out_ = out;
        err_ = err;
      };
      LauncherRun r = runLauncher(args, hooks);
      std::lock_guard<std::mutex> lock(mu_);
      run_ = r;
      done_ = true;
    });
  }
  ~Node() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits (at most `timeout`) until the launcher's stderr holds `text`.
  bool waitForErr(const std::string& text, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (err_.find(text) != std::string::npos || run_.err.find(text) != std::string::npos) {
          return true;
        }
        if (done_) return false;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }
  pid_t pid() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_ ? -1 : pid_;
  }
  const LauncherRun& join() {
    if (thread_.joinable()) thread_.join();
    return run_;
  }

 private:
  std::mutex mu_;
  pid_t pid_ = -1;
  std::string out_;
  std::string err_;
  bool done_ = false;
  LauncherRun run_;
  std::thread thread_;
};

std::vector<std::string> nodeArgs(int port, const std::string& nnodes, const std::string& addr,
                                  const std::vector<std::string>& extra,
                                  const std::vector<std::string>& program,
                                  const std::string& conf = kFastConf,
                                  const std::string& backend = "c10d") {
  std::vector<std::string> args = {"--rdzv-backend",
                                   backend,
                                   "--rdzv-endpoint",
                                   "127.0.0.1:" + std::to_string(port),
                                   "--rdzv-id",
                                   "job" + std::to_string(getpid()),
                                   "--nnodes",
                                   nnodes,
                                   "--local-addr",
                                   addr,
                                   "--rdzv-conf",
                                   conf,
                                   "--grace-period-s",
                                   "2",
                                   "--monitor-interval-ms",
                                   "50"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

// The log lines the worker's rank 0 wrote: (step, world) pairs.
std::vector<std::pair<int, int>> steps(const std::string& dir) {
  std::vector<std::pair<int, int>> out;
  std::istringstream in(readFile(dir + "/log"));
  std::string word;
  int step = 0, world = 0;
  std::string round;
  while (in >> word >> step >> word >> world >> word >> round) out.emplace_back(step, world);
  return out;
}

// Waits up to `timeout` for a log line with this world size and step >= minStep.
bool waitForStep(const std::string& dir, int world, int minStep, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (auto [s, w] : steps(dir)) {
      if (w == world && s >= minStep) return true;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// Steps 1..last each logged at least once, in order of first appearance, none skipped.
void expectAllSteps(const std::string& dir, int last) {
  int expect = 1;
  for (auto [s, w] : steps(dir)) {
    if (s <= expect - 1) continue;  // replayed after a restart from the checkpoint
    EXPECT_EQ(s, expect) << readFile(dir + "/log");
    expect = s + 1;
  }
  EXPECT_EQ(expect - 1, last) << readFile(dir + "/log");
}

TEST(C10drunElastic, KilledNodeLeavesTwoThatFinish) {
  TempDir dir;
  const int port = freePortNow();
  const std::vector<std::string> program = {elasticWorker(), "train", "60", dir.path(), "40"};
  Node a(nodeArgs(port, "2:3", "127.0.0.1", {"--max-restarts", "3"}, program), milliseconds(60000));
  ASSERT_TRUE(a.waitForErr("hosted by this launcher", milliseconds(10000))) << a.join().describe();
  Node b(nodeArgs(port, "2:3", "127.0.0.2", {"--max-restarts", "3"}, program), milliseconds(60000));
  Node c(nodeArgs(port, "2:3", "127.0.0.3", {"--max-restarts", "3"}, program), milliseconds(60000));
  // Three nodes join within the last call: one round of 3; kill the third mid-run.
  ASSERT_TRUE(waitForStep(dir.path(), 3, 5, milliseconds(30000))) << readFile(dir.path() + "/log");
  const pid_t victim = c.pid();
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  const LauncherRun& rc = c.join();
  EXPECT_TRUE(rc.signal == SIGKILL) << rc.describe();
  ASSERT_TRUE(ra.exited && ra.exitCode == 0) << ra.describe();
  ASSERT_TRUE(rb.exited && rb.exitCode == 0) << rb.describe();
  // Both survivors re-formed a round of two, with one restart, and trained to the end.
  for (const LauncherRun* r : {&ra, &rb}) {
    EXPECT_NE(r->err.find("group rank"), std::string::npos) << r->describe();
    EXPECT_NE(r->err.find("of 2 nodes"), std::string::npos) << r->describe();
    EXPECT_NE(r->err.find("restart 1"), std::string::npos) << r->describe();
  }
  EXPECT_NE(ra.out.find("finished world 2"), std::string::npos) << ra.describe();
  EXPECT_NE(rb.out.find("finished world 2"), std::string::npos) << rb.describe();
  const auto log = steps(dir.path());
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), std::make_pair(60, 2)) << readFile(dir.path() + "/log");
  expectAllSteps(dir.path(), 60);
}

// The same over an etcd server (--rdzv-backend etcd): no launcher hosts the store, so the first
// node may be the one that dies; here it is, and the other two re-form and finish.
TEST(C10drunElastic, KilledFirstNodeOverEtcdLeavesTwoThatFinish) {
#ifndef C10D_TEST_ETCD_RDZV
  GTEST_SKIP() << "built without the EtcdStore library (libcurl or nlohmann-json missing)";
#else
  const std::string missing = ServerProcess::serverMissing(ServerProcess::Kind::kEtcd);
  if (!missing.empty()) GTEST_SKIP() << missing;
  ServerProcess etcd(ServerProcess::Kind::kEtcd);
  TempDir dir;
  const int port = etcd.port();
  const std::vector<std::string> program = {elasticWorker(), "train", "60", dir.path(), "40"};
  auto args = [&](const std::string& addr) {
    return nodeArgs(port, "2:3", addr, {"--max-restarts", "3"}, program, kFastConf, "etcd");
  };
  Node a(args("127.0.0.1"), milliseconds(60000));
  ASSERT_TRUE(a.waitForErr("rendezvous through the etcd store", milliseconds(10000)))
      << a.join().describe();
  Node b(args("127.0.0.2"), milliseconds(60000));
  Node c(args("127.0.0.3"), milliseconds(60000));
  ASSERT_TRUE(waitForStep(dir.path(), 3, 5, milliseconds(30000))) << readFile(dir.path() + "/log");
  const pid_t victim = a.pid();
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  const LauncherRun& rc = c.join();
  EXPECT_TRUE(ra.signal == SIGKILL) << ra.describe();
  ASSERT_TRUE(rb.exited && rb.exitCode == 0) << rb.describe() << "\netcd log:\n" << etcd.log();
  ASSERT_TRUE(rc.exited && rc.exitCode == 0) << rc.describe() << "\netcd log:\n" << etcd.log();
  for (const LauncherRun* r : {&rb, &rc}) {
    EXPECT_NE(r->err.find("of 2 nodes"), std::string::npos) << r->describe();
    EXPECT_NE(r->err.find("restart 1"), std::string::npos) << r->describe();
  }
  const auto log = steps(dir.path());
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), std::make_pair(60, 2)) << readFile(dir.path() + "/log");
  expectAllSteps(dir.path(), 60);
#endif
}

// A launcher that stops beating (SIGSTOP: its workers run on, so nothing fails but the
// heartbeat) is declared gone by its peers, who re-form without it.
TEST(C10drunElastic, FrozenNodeIsDeclaredGoneByItsHeartbeat) {
  TempDir dir;
  const int port = freePortNow();
  const std::vector<std::string> program = {elasticWorker(), "train", "60", dir.path(), "40"};
  Node a(nodeArgs(port, "2:3", "127.0.0.1", {"--max-restarts", "1"}, program), milliseconds(60000));
  ASSERT_TRUE(a.waitForErr("hosted by this launcher", milliseconds(10000))) << a.join().describe();
  Node b(nodeArgs(port, "2:3", "127.0.0.2", {"--max-restarts", "1"}, program), milliseconds(60000));
  Node c(nodeArgs(port, "2:3", "127.0.0.3", {"--max-restarts", "1"}, program), milliseconds(60000));
  ASSERT_TRUE(waitForStep(dir.path(), 3, 5, milliseconds(30000))) << readFile(dir.path() + "/log");
  const pid_t frozen = c.pid();
  ASSERT_GT(frozen, 0);
  ASSERT_EQ(kill(frozen, SIGSTOP), 0);
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  kill(frozen, SIGKILL);  // its workers died with the old round; the launcher goes now
  c.join();
  ASSERT_TRUE(ra.exited && ra.exitCode == 0) << ra.describe();
  ASSERT_TRUE(rb.exited && rb.exitCode == 0) << rb.describe();
  const std::string gone = "node 127.0.0.3 (";
  EXPECT_TRUE(ra.err.find(gone) != std::string::npos &&
              (ra.err.find("is gone: no heartbeat for") != std::string::npos))
      << ra.describe();
  EXPECT_NE(ra.out.find("finished world 2"), std::string::npos) << ra.describe();
  EXPECT_EQ(steps(dir.path()).back(), std::make_pair(60, 2)) << readFile(dir.path() + "/log");
  expectAllSteps(dir.path(), 60);
}

TEST(C10drunElastic, LateJoinerStartsANewRoundOfThree) {
  TempDir dir;
  const int port = freePortNow();
  const std::vector<std::string> program = {elasticWorker(), "train", "80", dir.path(), "40"};
  Node a(nodeArgs(port, "2:3", "127.0.0.1", {}, program), milliseconds(60000));
  ASSERT_TRUE(a.waitForErr("hosted by this launcher", milliseconds(10000))) << a.join().describe();
  Node b(nodeArgs(port, "2:3", "127.0.0.2", {}, program), milliseconds(60000));
  ASSERT_TRUE(waitForStep(dir.path(), 2, 5, milliseconds(30000))) << readFile(dir.path() + "/log");
  Node c(nodeArgs(port, "2:3", "127.0.0.3", {}, program), milliseconds(60000));
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  const LauncherRun& rc = c.join();
  for (const LauncherRun* r : {&ra, &rb, &rc}) {
    ASSERT_TRUE(r->exited && r->exitCode == 0) << r->describe();
    EXPECT_NE(r->out.find("finished world 3"), std::string::npos) << r->describe();
  }
  EXPECT_NE(rc.err.find("waits for the next round"), std::string::npos) << rc.describe();
  EXPECT_NE(ra.err.find("waiting to join"), std::string::npos) << ra.describe();
  // A newcomer is not a failure: the restart count stays 0 (--max-restarts 0 here).
  EXPECT_NE(ra.err.find("of 3 nodes"), std::string::npos) << ra.describe();
  EXPECT_EQ(ra.err.find("restart 1"), std::string::npos) << ra.describe();
  const auto log = steps(dir.path());
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), std::make_pair(80, 3)) << readFile(dir.path() + "/log");
  expectAllSteps(dir.path(), 80);
}

TEST(C10drunElastic, FewerThanMinNodesIsAnErrorAfterTheJoinTimeout) {
  TempDir dir;
  const int port = freePortNow();
  Node a(nodeArgs(port, "2:3", "127.0.0.1", {}, {elasticWorker(), "train", "5", dir.path()},
                  "join_timeout=2,last_call_timeout=1"),
         milliseconds(20000));
  const LauncherRun& r = a.join();
  EXPECT_TRUE(r.exited && r.exitCode == 1) << r.describe();
  EXPECT_NE(r.err.find("round 0: only 1 of the 2 nodes needed (--nnodes 2:3) joined within "
                       "join_timeout 2 s"),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.err.find("127.0.0.1"), std::string::npos) << r.describe();  // who joined
  EXPECT_GE(r.seconds, 1.9);
  EXPECT_LT(r.seconds, 10);
  EXPECT_TRUE(readFile(dir.path() + "/log").empty());  // no worker ran
}

TEST(C10drunElastic, MaxRestartsExhaustedExitsNamingTheCause) {
  const int port = freePortNow();
  const std::vector<std::string> program = {elasticWorker(), "fail", "3"};
  Node a(nodeArgs(port, "2:2", "127.0.0.1", {"--max-restarts", "1"}, program), milliseconds(40000));
  ASSERT_TRUE(a.waitForErr("hosted by this launcher", milliseconds(10000))) << a.join().describe();
  Node b(nodeArgs(port, "2:2", "127.0.0.2", {"--max-restarts", "1"}, program), milliseconds(40000));
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  for (const LauncherRun* r : {&ra, &rb}) {
    // Non-zero (the failed worker's code when it was this node's), and a line naming the rule
    // and the last failure; rounds 0 and 1 ran (one restart), round 2 never closed.
    EXPECT_TRUE(r->exited && (r->exitCode == 3 || r->exitCode == 1)) << r->describe();
    EXPECT_NE(r->err.find("round 2: no restarts left (--max-restarts 1 used up); round 1 ended: "
                          "node "),
              std::string::npos)
        << r->describe();
    EXPECT_NE(r->err.find("failed: exited with code 3"), std::string::npos) << r->describe();
    EXPECT_NE(r->err.find("of 2 nodes (ranks"), std::string::npos) << r->describe();
    EXPECT_EQ(r->err.find("joined rendezvous 'job" + std::to_string(getpid()) + "' round 2"),
              std::string::npos)
        << r->describe();
  }
  EXPECT_TRUE(ra.exitCode == 3 || rb.exitCode == 3) << ra.describe() << rb.describe();
}

#ifdef TRAIN_MLP_PATH
// Label stress: the training example (examples/train_mlp, DDP) on 3 nodes, one killed mid-run:
// the two others resume from the newest checkpoint at world size 2 and finish every step.
TEST(C10drunElasticStress, TrainMlpSurvivesAKilledNode) {
  TempDir dir;
  const std::string ck = dir.path() + "/ck";
  const int port = freePortNow();
  const std::vector<std::string> program = {TRAIN_MLP_PATH,
                                            "--mode",
                                            "ddp",
                                            "--hidden",
                                            "128",
                                            "--layers",
                                            "3",
                                            "--steps",
                                            "6000",
                                            "--global-batch",
                                            "60",
                                            "--checkpoint-dir",
                                            ck,
                                            "--checkpoint-every",
                                            "10",
                                            "--log-every",
                                            "500"};
  Node a(nodeArgs(port, "2:3", "127.0.0.1", {"--max-restarts", "2"}, program),
         milliseconds(120000));
  ASSERT_TRUE(a.waitForErr("hosted by this launcher", milliseconds(10000))) << a.join().describe();
  Node b(nodeArgs(port, "2:3", "127.0.0.2", {"--max-restarts", "2"}, program),
         milliseconds(120000));
  Node c(nodeArgs(port, "2:3", "127.0.0.3", {"--max-restarts", "2"}, program),
         milliseconds(120000));
  ASSERT_TRUE(a.waitForErr("of 3 nodes", milliseconds(30000))) << a.join().describe();
  // Kill once the round of 3 has written a checkpoint (a fixed sleep raced with an idle machine
  // finishing all the steps first).
  const auto deadline = Clock::now() + milliseconds(60000);
  auto haveCheckpoint = [&] {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(ck, ec)) {
      if (e.path().filename().string().rfind("step-", 0) == 0) return true;
    }
    return false;
  };
  while (!haveCheckpoint() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(haveCheckpoint()) << "no checkpoint in " << ck << " after 60 s";
  const pid_t victim = c.pid();
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const LauncherRun& ra = a.join();
  const LauncherRun& rb = b.join();
  c.join();
  ASSERT_TRUE(ra.exited && ra.exitCode == 0) << ra.describe();
  ASSERT_TRUE(rb.exited && rb.exitCode == 0) << rb.describe();
  EXPECT_NE(ra.out.find("3 ranks over"), std::string::npos) << ra.describe();
  EXPECT_NE(ra.out.find("2 ranks over"), std::string::npos) << ra.describe();
  EXPECT_NE(ra.out.find("written by 3 ranks"), std::string::npos) << ra.describe();
  EXPECT_NE(ra.out.find("final loss"), std::string::npos) << ra.describe();
  EXPECT_EQ(std::system(("rm -rf '" + ck + "'").c_str()), 0);
}
#endif

TEST(C10drunElastic, BadRendezvousOptionsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--nnodes", "2:3", "true"}, "a node range needs a dynamic rendezvous"},
      {{"--rdzv-backend", "c10d", "true"}, "needs --rdzv-endpoint"},
      {{"--rdzv-backend", "zk", "--rdzv-endpoint", "h:1", "true"}, "'zk' is not one of"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--rdzv-conf", "bogus=1", "true"},
       "unknown key 'bogus'"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--rdzv-conf", "join_timeout=-1",
        "true"},
       "join_timeout=-1"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--node-rank", "1", "true"},
       "--node-rank does not go with --rdzv-backend c10d"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--nnodes", "3:2", "true"},
       "need 1 <= MIN <= MAX"},
      {{"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:99999", "true"}, "port '99999'"},
      {{"--rdzv-backend", "etcd", "--rdzv-endpoint", "127.0.0.1:2379", "--rdzv-id", "a?b", "true"},
       "cannot appear in an etcd key prefix"},
      {{"--rdzv-backend", "etcd", "--rdzv-endpoint", "127.0.0.1:2379,:5", "true"}, "missing host"},
  };
  for (const auto& c : cases) {
    LauncherHooks hooks;
    hooks.timeout = milliseconds(10000);
    LauncherRun r = runLauncher(c.args, hooks);
    EXPECT_TRUE(r.exited && r.exitCode == 2) << r.describe();
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.message << "\n" << r.describe();
  }
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
