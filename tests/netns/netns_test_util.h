// Pieces shared by the multi-host tests: the binaries they run on the virtual hosts and the rank
// commands for a placement of ranks on hosts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/netns/virtual_hosts.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// Port of rank 0's TCPStore on host0: fixed, since every test's hosts have a network of their own.
constexpr const char* kMasterPort = "29500";

// One netns_worker rank per entry of `hostOf` (rank r on host hostOf[r]), env:// rendezvous at
// host0; `extra` is added to every rank's environment.
std::vector<HostCommand> workerRanks(const std::vector<int>& hostOf,
                                     const std::map<std::string, std::string>& extra);

// gtest failures for every result that is not ok, with its output.
void expectAllOk(const std::vector<HostResult>& results);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
