// The example's data: a synthetic classification task generated from the seed (no downloads), and
// the plan that says which samples each rank trains on at each step.
//
// SyntheticDataset
//   Inputs are standard normal vectors; sample i's comes from its own random stream (seed, i), so
//   any rank can produce any sample. Labels come from a fixed random "teacher" network (input ->
//   64 ReLU units -> classes, weights drawn from the seed) as the argmax of its output: a task an
//   MLP can learn, so the loss visibly falls. Samples [0, trainSize) are the training set; an
//   evaluation set of evalSize samples follows them (same distribution, never trained on).
//
// BatchPlan (data-parallel batches with torch's DistributedSampler semantics)
//   Step s (1-based) of a run with global batch B on W ranks reads batch k = s - 1 of epoch
//   e = k / stepsPerEpoch (stepsPerEpoch = trainSize / B, the last partial batch dropped); the
//   epoch's order is the sampler's permutation of (seed + e) (setEpoch(e)). Rank r's sampler gives
//   it positions r, r + W, r + 2W, ... of that order, and rank r takes its b = B / W indices
//   [j * b, (j + 1) * b) with j = k mod stepsPerEpoch, i.e. positions [j * B, (j + 1) * B) of the
//   epoch order strided over ranks. So the union over ranks of step s's samples is exactly the
//   one-process run's batch at step s, whatever W, and the samples depend only on (seed, step):
//   a resumed run reads what the uninterrupted one read.
//
// Threads: none. Errors: InvalidArgument for sizes that cannot work (named). Memory: the dataset
// holds (trainSize + evalSize) x inputDim floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/layers/data/distributed_sampler.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

struct DatasetOptions {
  uint64_t seed = 0;
  size_t trainSize = 4096;
  size_t evalSize = 1024;
  size_t inputDim = 32;
  size_t classes = 10;
};

class SyntheticDataset {
 public:
  explicit SyntheticDataset(const DatasetOptions& options);

  size_t trainSize() const { return options_.trainSize; }
  size_t evalSize() const { return options_.evalSize; }
  size_t inputDim() const { return options_.inputDim; }
  // Copies the training samples `indices` into x (rows of inputDim) and labels.
  void gather(const std::vector<size_t>& indices, std::vector<float>* x,
              std::vector<int32_t>* labels) const;
  // The evaluation set, back to back.
  const float* evalInputs() const { return inputs_.data() + options_.trainSize * inputDim(); }
  const int32_t* evalLabels() const { return labels_.data() + options_.trainSize; }
  // Training samples per class (how balanced the teacher's labels are).
  std::vector<size_t> classCounts() const;

 private:
  DatasetOptions options_;
  std::vector<float> inputs_;
  std::vector<int32_t> labels_;
};

class BatchPlan {
 public:
  // InvalidArgument unless globalBatch >= 1, globalBatch % worldSize == 0 and trainSize >=
  // globalBatch.
  BatchPlan(size_t trainSize, size_t globalBatch, int worldSize, int rank, uint64_t seed);

  size_t globalBatch() const { return global_; }
  size_t microBatch() const { return micro_; }
  size_t stepsPerEpoch() const { return stepsPerEpoch_; }
  uint64_t epochOf(uint64_t step) const { return (step - 1) / stepsPerEpoch_; }
  // This rank's sample indices for `step` (>= 1), microBatch() of them.
  std::vector<size_t> indices(uint64_t step);

 private:
  size_t global_;
  size_t micro_;
  size_t stepsPerEpoch_;
  data::DistributedSampler sampler_;
  bool cached_ = false;
  std::vector<size_t> epochIndices_;  // the sampler's indices() for sampler_.epoch()
};

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
