#include "tests/netns/netns_test_util.h"

#include <gtest/gtest.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

std::vector<HostCommand> workerRanks(const std::vector<int>& hostOf,
                                     const std::map<std::string, std::string>& extra) {
  std::vector<HostCommand> cmds;
  const int size = static_cast<int>(hostOf.size());
  for (int r = 0; r < size; ++r) {
    int local = 0, localSize = 0;
    for (int q = 0; q < size; ++q) {
      localSize += hostOf[q] == hostOf[r];
      local += q < r && hostOf[q] == hostOf[r];
    }
    HostCommand c;
    c.host = hostOf[r];
    c.tag = "rank " + std::to_string(r);
    c.argv = {NETNS_WORKER_PATH};
    c.env = extra;
    c.env["RANK"] = std::to_string(r);
    c.env["WORLD_SIZE"] = std::to_string(size);
    c.env["LOCAL_RANK"] = std::to_string(local);
    c.env["LOCAL_WORLD_SIZE"] = std::to_string(localSize);
    c.env["MASTER_ADDR"] = VirtualHosts::address(0);
    c.env["MASTER_PORT"] = kMasterPort;
    c.env["C10D_NETNS_HOST"] = VirtualHosts::hostname(hostOf[r]);
    cmds.push_back(c);
  }
  return cmds;
}

void expectAllOk(const std::vector<HostResult>& results) {
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.describe();
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
