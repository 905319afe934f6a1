// DistributedSampler: which dataset indices each rank reads in an epoch, with the semantics of
// torch.utils.data.distributed.DistributedSampler.
//
//   numSamples  = dropLast && size % replicas != 0 ? floor(size / replicas)   (torch:
//                                                     ceil((size - replicas) / replicas))
//                                                  : ceil(size / replicas)
//   totalSize   = numSamples * replicas
//   epoch order = shuffle ? a permutation of [0, size) drawn from seed + epoch : 0, 1, ..., size-1
//   padded      = dropLast ? order[:totalSize]
//                          : order repeated (wrapping around as often as needed) to totalSize
//   rank r gets padded[r], padded[r + replicas], padded[r + 2 * replicas], ...
//
// Every rank computes the same permutation from (seed, epoch) without communicating; call
// setEpoch(e) at the start of each epoch (as in torch), or every epoch sees the same order.
//
// The permutation is deterministic on every platform, but it is not torch's randperm (which depends
// on torch's generator internals): a Fisher-Yates shuffle (for i = n-1 down to 1, swap i with a
// uniform j in [0, i]) driven by SplitMix64 seeded with seed + epoch; j comes from rejection
// sampling (draw x until x >= 2^64 mod (i + 1), then j = x mod (i + 1)), so it is unbiased.
//
// Thread-safety: const methods may be called concurrently; setEpoch() must not race with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace c10d {
namespace data {

class DistributedSampler {
 public:
  struct Options {
    bool shuffle = true;
    uint64_t seed = 0;
    bool dropLast = false;
  };

  // Throws InvalidArgument unless numReplicas > 0 and 0 <= rank < numReplicas.
  DistributedSampler(size_t datasetSize, int numReplicas, int rank, Options options);
  DistributedSampler(size_t datasetSize, int numReplicas, int rank)
      : DistributedSampler(datasetSize, numReplicas, rank, Options()) {}

  void setEpoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  // This rank's indices for the current epoch, in the order to read them (numSamples() of them).
  std::vector<size_t> indices() const;
  // The epoch's full order before padding and striding (a permutation when shuffling).
  std::vector<size_t> epochOrder() const;

  size_t numSamples() const { return numSamples_; }
  size_t totalSize() const { return numSamples_ * static_cast<size_t>(numReplicas_); }
  size_t datasetSize() const { return datasetSize_; }
  int numReplicas() const { return numReplicas_; }
  int rank() const { return rank_; }

 private:
  size_t datasetSize_;
  int numReplicas_;
  int rank_;
  Options options_;
  uint64_t epoch_ = 0;
  size_t numSamples_ = 0;
};

// The shuffle above, exposed for tests and for other layers that need the same permutation:
// a permutation of [0, n) drawn from `seed`.
std::vector<size_t> deterministicPermutation(size_t n, uint64_t seed);

}  // namespace data
}  // namespace c10d
