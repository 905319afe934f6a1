// Deterministic random numbers for the example: every value the run draws (initial weights, the
// teacher's weights, the inputs) is a pure function of (seed, stream, index), identical on every
// rank, so that any rank can regenerate any sample without communicating. (The integer stream is
// the same on every platform; normal() goes through libm's log/cos, so bit-identical floats are
// promised only between processes using the same libm, as the ranks of one job do.)
#pragma once

#include <cmath>
#include <cstdint>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose output is fixed by its definition.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // A generator for one purpose ("stream") of one run, e.g. Rng::forStream(seed, kInitStream).
  static Rng forStream(uint64_t seed, uint64_t stream, uint64_t index = 0) {
    Rng mix(seed ^ (stream * 0xd1b54a32d192ed03ull));
    Rng mix2(mix.next() ^ (index * 0x8cb92ba72f3d8dd7ull));
    return Rng(mix2.next());
  }

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Standard normal (Box-Muller; one value per call, the cosine branch).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log() stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Streams of one run (any distinct constants).
constexpr uint64_t kInitStream = 1;     // the model's initial parameters
constexpr uint64_t kTeacherStream = 2;  // the teacher network that labels the data
constexpr uint64_t kInputStream = 3;    // sample i's input vector (index = i)

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
