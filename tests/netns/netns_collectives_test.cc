// Collectives across real network stacks: ranks on virtual hosts (tests/netns/virtual_hosts.h),
// each rank a netns_worker process that builds its group from env:// (rank 0's TCPStore on host0)
// and runs the conformance sweep against references computed in the worker.
//
// verbs decides which ranks share a host from the boot id and the hostname: on these hosts the
// boot id is the machine's and the hostnames differ, so ranks of one host talk over shm and the
// others over tcp through the hosts' veth links, with no C10D_HOST_ID.
#include <chrono>

#include <gtest/gtest.h>

#include "tests/netns/netns_test_util.h"

namespace c10d {
namespace test {
namespace {

void sweep(int hosts, const std::vector<int>& hostOf, const std::string& backend,
           const std::string& expect, const std::string& counts) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts vh(hosts);
  auto results = vh.runAll(workerRanks(hostOf, {{"C10D_NETNS_MODE", "sweep"},
                                                {"C10D_NETNS_BACKEND", backend},
                                                {"C10D_NETNS_EXPECT", expect},
                                                {"C10D_NETNS_COUNTS", counts}}),
                           std::chrono::seconds(90));
  expectAllOk(results);
  for (const auto& r : results) {
    EXPECT_NE(r.output.find("sweep done"), std::string::npos) << r.describe();
  }
}

TEST(NetnsCollectives, VerbsTwoHostsOfTwoRanksMixShmAndTcp) {
  sweep(2, {0, 0, 1, 1}, "verbs", "verbs/shm+tcp", "0,7,4099");
}

TEST(NetnsCollectives, VerbsInterleavedRanksOnTwoHosts) {
  sweep(2, {0, 1, 0, 1}, "verbs", "verbs/shm+tcp", "1,4099");
}

TEST(NetnsCollectives, VerbsThreeHostsOfOneRankUseTcp) {
  sweep(3, {0, 1, 2}, "verbs", "verbs/tcp", "1,4099");
}

TEST(NetnsCollectives, GlooTwoHostsOfTwoRanks) {
  sweep(2, {0, 0, 1, 1}, "gloo", "gloo", "7");
}

}  // namespace
}  // namespace test
}  // namespace c10d
