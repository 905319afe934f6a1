// A verbs configuration that the parameterized multi-process tests run (verbs_bits_test.cc,
// verbs_half_test.cc): a name, Options::config, a world size and, to play several hosts on one
// machine, each rank's C10D_HOST_ID; and the hash they derive their inputs from.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct VerbsCase {
  std::string name;
  std::map<std::string, std::string> config;
  int worldSize;
  std::vector<std::string> hosts = {};  // rank r's C10D_HOST_ID (empty: all on this host)
};

inline void PrintTo(const VerbsCase& c, std::ostream* os) {
  *os << c.name << "_ws" << c.worldSize;
}

// splitmix64's finaliser: a well-mixed 64-bit hash of z.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Runs `body(group, param, rank, n)` on every rank of a verbs group in c's configuration (each rank
// with its C10D_HOST_ID when c.hosts is set), in real processes.
inline void runVerbsCase(
    const VerbsCase& c, const std::string& tag,
    const std::function<void(ProcessGroup&, const BackendParam&, int, int)>& body) {
  BackendParam p;
  p.backend = "verbs";
  p.config = c.config;
  const std::string path = uniqueTempPath(tag);
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(120);
  expectAllRanksOk(
      c.worldSize,
      [&](int rank, int n) {
        BackendParam mine = p;
        if (!c.hosts.empty()) mine.config["C10D_HOST_ID"] = c.hosts[static_cast<size_t>(rank)];
        auto pg = makeGroup(mine, path, rank, n);
        body(*pg, p, rank, n);
        if (!::testing::Test::HasFailure()) pg->barrier()->wait();
      },
      mp);
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
