// Elastic launch across real network stacks: an etcd server on host0, one `c10drun --rdzv-backend
// etcd --nnodes 2:3` per host on three virtual hosts, each training examples/train_mlp (DDP) with
// checkpoints on a directory every host sees (the caller's /tmp, as a shared file system would
// be). Mid-run host2 dies whole: its pid-1 is SIGKILLed, so every process on it dies and its link
// goes with its network namespace (no FIN, no RST: the survivors learn it from the missed
// heartbeats). The two survivors must re-form a round of two, resume from the newest checkpoint
// and train to the end. Every wait is bounded; the hosts vanish with the test however it ends.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/netns/netns_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

#if defined(C10DRUN_PATH) && defined(TRAIN_MLP_PATH)

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string etcdBinary() {
  const char* env = std::getenv("C10D_ETCD_BIN");
  if (env != nullptr && *env != '\0') return env;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/sbin"}) {
    const std::string p = std::string(dir) + "/etcd";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

bool hasCheckpoint(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("step-", 0) == 0) return true;
  }
  return false;
}

TEST(NetnsElastic, EtcdJobLosesOneOfThreeHostsAndFinishesOnTwo) {
  C10D_SKIP_WITHOUT_NETNS();
  const std::string etcd = etcdBinary();
  if (etcd.empty())
    GTEST_SKIP() << "no etcd binary (install Debian's etcd-server or set C10D_ETCD_BIN)";
  VirtualHosts vh(3);
  const std::string scratch = uniqueTempPath("netns-elastic");
  fs::create_directories(scratch);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};
  const std::string ck = scratch + "/ck";

  // etcd on host0, its data in the scratch directory; clients reach it at host0's address.
  const std::string client = "http://" + VirtualHosts::address(0) + ":2379";
  HostCommand server;
  server.host = 0;
  server.tag = "etcd";
  server.argv = {etcd,
                 "--name",
                 "host0",
                 "--data-dir",
                 scratch + "/etcd",
                 "--listen-client-urls",
                 client,
                 "--advertise-client-urls",
                 client,
                 "--listen-peer-urls",
                 "http://127.0.0.1:2380",
                 "--initial-advertise-peer-urls",
                 "http://127.0.0.1:2380",
                 "--initial-cluster",
                 "host0=http://127.0.0.1:2380",
                 "--log-level",
                 "warn"};
  VirtualHosts::Process etcdProc = vh.start(server);
  vh.check(1,
           {"bash", "-c",
            "for i in $(seq 300); do (echo > /dev/tcp/" + VirtualHosts::address(0) +
                "/2379) 2>/dev/null && exit 0; sleep 0.1; done; echo etcd never listened; exit 1"},
           std::chrono::seconds(40));

  std::vector<VirtualHosts::Process> nodes;
  for (int h = 0; h < 3; ++h) {
    HostCommand c;
    c.host = h;
    c.tag = "c10drun";
    c.argv = {C10DRUN_PATH,
              "--rdzv-backend",
              "etcd",
              "--rdzv-endpoint",
              VirtualHosts::hostname(0) + ":2379",
              "--rdzv-id",
              "netns-elastic",
              "--nnodes",
              "2:3",
              "--max-restarts",
              "2",
              "--rdzv-conf",
              "join_timeout=60,last_call_timeout=2,close_timeout=20,keep_alive_interval=0.2,"
              "keep_alive_max_attempt=5",
              "--grace-period-s",
              "2",
              "--monitor-interval-ms",
              "50",
              TRAIN_MLP_PATH,
              "--mode",
              "ddp",
              "--hidden",
              "128",
              "--layers",
              "3",
              "--steps",
              "3000",
              "--global-batch",
              "60",
              "--timeout-s",
              "60",
              "--checkpoint-dir",
              ck,
              "--checkpoint-every",
              "10",
              "--log-every",
              "500",
              "--backend",
              "verbs"};
    nodes.push_back(vh.start(c));
  }
  // Host2 dies once the round of three has checkpointed.
  const auto deadline = Clock::now() + std::chrono::seconds(90);
  while (!hasCheckpoint(ck) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!hasCheckpoint(ck)) {
    for (auto& p : nodes) ADD_FAILURE() << vh.wait(p, Clock::now()).describe();
    FAIL() << "no checkpoint in " << ck << " after 90 s";
  }
  ASSERT_EQ(::kill(vh.holderPid(2), SIGKILL), 0);

  HostResult r0 = vh.wait(nodes[0], Clock::now() + std::chrono::seconds(120));
  HostResult r1 = vh.wait(nodes[1], Clock::now() + std::chrono::seconds(30));
  HostResult r2 = vh.wait(nodes[2], Clock::now() + std::chrono::seconds(5));
  vh.kill(etcdProc);
  HostResult re = vh.wait(etcdProc, Clock::now() + std::chrono::seconds(5));
  EXPECT_FALSE(r2.ok()) << r2.describe();
  ASSERT_TRUE(r0.ok()) << r0.describe() << "\n" << r1.describe() << "\n" << re.describe();
  ASSERT_TRUE(r1.ok()) << r1.describe() << "\n" << r0.describe() << "\n" << re.describe();
  for (const HostResult* r : {&r0, &r1}) {
    EXPECT_NE(r->output.find("rendezvous through the etcd store"), std::string::npos)
        << r->describe();
    EXPECT_NE(r->output.find("of 3 nodes"), std::string::npos) << r->describe();
    EXPECT_NE(r->output.find("of 2 nodes"), std::string::npos) << r->describe();
    EXPECT_NE(r->output.find("restart 1"), std::string::npos) << r->describe();
  }
  // Group rank 0 of each round prints the training's lines: a world of 3, then one of 2 resumed
  // from a checkpoint written by 3 ranks, trained to the end.
  const std::string all = r0.output + r1.output;
  EXPECT_NE(all.find("3 ranks over"), std::string::npos) << r0.describe() << r1.describe();
  EXPECT_NE(all.find("2 ranks over"), std::string::npos) << r0.describe() << r1.describe();
  EXPECT_NE(all.find("written by 3 ranks"), std::string::npos) << r0.describe() << r1.describe();
  EXPECT_NE(all.find("final loss"), std::string::npos) << r0.describe() << r1.describe();
}

#endif  // C10DRUN_PATH && TRAIN_MLP_PATH

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
