// A verbs configuration that the parameterized multi-process tests run (verbs_bits_test.cc,
// verbs_half_test.cc): a name, Options::config, a world size and, to play several hosts on one
// machine, each rank's C10D_HOST_ID; and the hash they derive their inputs from.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace c10d {
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

}  // namespace test
}  // namespace c10d
