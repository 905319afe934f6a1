#include "c10d/layers/data/distributed_sampler.h"

#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace data {

std::vector<size_t> torchRandperm(size_t n, uint64_t seed, Randperm form) {
  std::vector<size_t> r(n);
  // torch seeds its mt19937 with the seed's low 32 bits (the standard initialisation).
  std::mt19937 gen(static_cast<uint32_t>(seed));
  constexpr size_t kSmall = std::numeric_limits<uint32_t>::max() / 20;
  if (n < kSmall || form == Randperm::kTorch1_13) {
    std::iota(r.begin(), r.end(), size_t{0});
    for (size_t i = 0; i + 1 < n; ++i) {
      const size_t z = gen() % (n - i);
      std::swap(r[i], r[z + i]);
    }
    return r;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint64_t hi = gen();
    const uint64_t lo = gen();
    const size_t z = static_cast<size_t>(((hi << 32) | lo) % (i + 1));
    r[i] = r[z];
    r[z] = i;
  }
  return r;
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
  if (options_.shuffle) {
    return torchRandperm(datasetSize_, options_.seed + epoch_, options_.randperm);
  }
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
C10D_NAMESPACE_END
}  // namespace c10d
