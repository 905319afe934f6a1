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
// The permutation is torch's: `torch.randperm(size, generator=g)` with `g.manual_seed(seed +
// epoch)` on the CPU, element for element (torchRandperm below), so a C++ rank and a Python rank
// of one job, or a C++ run resuming a Python one, read the same samples. torch changed randperm
// in 2.6 for n >= 2^32 / 20 (~215 M samples): Options::randperm says which torch to follow there.
//
// Thread-safety: const methods may be called concurrently; setEpoch() must not race with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace data {

// Which torch's randperm to reproduce. They agree below 2^32 / 20 elements (torchRandperm).
enum class Randperm {
  kTorch2_6,   // torch 2.6 and later (2.6 tested)
  kTorch1_13,  // torch before 2.6 (1.13 tested)
};

class DistributedSampler {
 public:
  struct Options {
    bool shuffle = true;
    uint64_t seed = 0;
    bool dropLast = false;
    Randperm randperm = Randperm::kTorch2_6;
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

// torch.randperm(n) from a CPU torch.Generator seeded with `seed`: the generator is MT19937
// initialised with the seed's low 32 bits. For n < 2^32 / 20 every torch swaps r[i] with
// r[i + x % (n - i)] for i = 0 .. n-2, x the generator's next 32-bit output. From n >= 2^32 / 20
// torch 2.6 and later build the permutation inside out with 64-bit draws (x = hi << 32 | lo):
// r[i] = r[j], r[j] = i for j = x % (i + 1), i = 0 .. n-1 (pytorch#143682); torch before 2.6
// keeps the first form at every n. torch_sampler_large_vs_torch (label sweep) compares n on both
// sides of 2^32 / 20 with torch 1.13 (kTorch1_13) and torch 2.6 (kTorch2_6).
std::vector<size_t> torchRandperm(size_t n, uint64_t seed, Randperm form = Randperm::kTorch2_6);

}  // namespace data
C10D_NAMESPACE_END
}  // namespace c10d
