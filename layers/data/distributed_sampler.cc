#include "layers/data/distributed_sampler.h"

#include <numeric>
#include <utility>

#include "c10d/error.h"

namespace c10d {
namespace data {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose output is fixed by its definition.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0, without modulo bias.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<size_t> deterministicPermutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  SplitMix64 rng(seed);
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.below(i));  // in [0, i - 1]
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

DistributedSampler::DistributedSampler(size_t datasetSize, int numReplicas, int rank,
                                       Options options)
    : datasetSize_(datasetSize), numReplicas_(numReplicas), rank_(rank), options_(options) {
  C10D_CHECK_ARG(numReplicas > 0, "DistributedSampler: numReplicas must be > 0, got ", numReplicas);
  C10D_CHECK_ARG(rank >= 0 && rank < numReplicas, "DistributedSampler: invalid rank ", rank,
                 ", rank should be in the interval [0, ", numReplicas - 1, "]");
  const size_t n = static_cast<size_t>(numReplicas);
  numSamples_ = options_.dropLast ? datasetSize_ / n : (datasetSize_ + n - 1) / n;
}

std::vector<size_t> DistributedSampler::epochOrder() const {
  if (options_.shuffle) return deterministicPermutation(datasetSize_, options_.seed + epoch_);
  std::vector<size_t> order(datasetSize_);
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

std::vector<size_t> DistributedSampler::indices() const {
  const std::vector<size_t> order = epochOrder();
  std::vector<size_t> mine;
  mine.reserve(numSamples_);
  // padded[k] = order[k % size]: torch's wrap-around padding (dropLast never reads past size).
  for (size_t k = static_cast<size_t>(rank_); k < totalSize();
       k += static_cast<size_t>(numReplicas_)) {
    mine.push_back(order[k % datasetSize_]);
  }
  return mine;
}

}  // namespace data
}  // namespace c10d
