// SyncBatchNorm: batch normalization whose statistics are taken over the whole data-parallel batch
// (every rank's samples), as torch.nn.SyncBatchNorm; one process gives torch's BatchNorm.
//
// Input layout: `batch` samples of C channels of S positions each, row-major (torch's [N, C, *]
// flattened: N x C x S), fp32 or bf16 on the host; S = numel / (batch x C). Each rank may hold a
// different batch, 0 included (its count is then 0; it still takes part in the collectives).
//
// Training forward (collective over the group: every rank calls it, in the same order):
//   per channel, this rank's count, mean and sum of squared deviations from it (two passes, in
//   double) -> one allgather of [count, means, M2s] -> combined in rank order by Chan's pairwise
//   update (the parallel Welford torch's SyncBatchNorm uses; no E[x^2] - mean^2 cancellation, so
//   inputs far from 0 keep their variance) -> mean and biased var over the group's N values;
//   y = (x - mean) / sqrt(var + eps) * weight + bias. Running statistics (when
//   tracked): running = (1 - momentum) * running + momentum * batch value, with the unbiased
//   variance var * N / (N - 1), as torch. Fewer than 2 values per channel over the group is an
//   InvalidArgument on every rank (torch: "Expected more than 1 value per channel").
// Backward (collective): per channel, this rank's sum(dy) and sum(dy * (x - mean)) -> one SUM
//   allreduce -> dx = (dy - sum(dy) / N - (x - mean) * invstd^2 * sum(dy (x - mean)) / N) *
//   invstd * weight: the gradient of the sum of every rank's loss, as torch's SyncBatchNorm.
//   weightGrad += this rank's sum(dy * xhat), biasGrad += this rank's sum(dy) (before the
//   allreduce: summed over ranks by whoever averages gradients, e.g. the DDP Reducer).
// Evaluation (setTraining(false)): normalizes with the running statistics; no communication.
//   Without tracked running statistics, evaluation uses the batch's statistics (collective, as
//   training, without updating anything), as torch.
// Saved state: each training forward keeps what its backward needs (the input view, mean and
// inverse
//   std: torch's autograd context), returned as a Saved handle; evaluation forwards and
//   later training forwards do not change a handle. backward(dy, dx) differentiates the last
//   training forward, backward(saved, dy, dx) any one.
//
// The input of a training forward must stay unchanged until its backward (it is read again, not
// copied, as torch's autograd keeps it). Statistics and arithmetic are in double; y and dx are
// rounded once to the input's dtype. Parameters (weight = 1, bias = 0 at construction) and running
// statistics (mean 0, variance 1) are fp32 and owned by the layer. Host memory only.
// Threads: one thread at a time, the group's issuing thread (the collectives run on its group).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/parameter.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace norm {

struct SyncBatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;  // torch's default
  bool affine = true;     // learnable weight and bias
  bool trackRunningStats = true;
  // Bound for each collective's wait; kUnsetTimeout: the op's (the group's) timeout.
  Milliseconds timeout = kUnsetTimeout;
};

class SyncBatchNorm {
 public:
  // `group` null or of size 1: plain batch norm over this process's batch.
  SyncBatchNorm(std::shared_ptr<ProcessGroup> group, size_t numFeatures,
                SyncBatchNormOptions options = {});

  void setTraining(bool training) { training_ = training; }
  bool training() const { return training_; }

  // What a training forward keeps for its backward.
  struct Saved {
    Tensor x;  // the forward's input (a view: must stay unchanged until the backward)
    size_t batch = 0;
    size_t spatial = 0;
    double count = 0;  // N over the group
    std::vector<double> mean, invstd;
  };

  // y <- BN(x) for `batch` samples (see the header comment). Throws InvalidArgument naming what is
  // wrong (dtype, device, sizes) before communicating; a failed collective's error as is. Returns
  // a training forward's saved state (null in evaluation).
  std::shared_ptr<const Saved> forward(const Tensor& x, size_t batch, const Tensor& y);
  // dx <- dL/dx for the last training forward (dy like its y; dx like its x, may be dy).
  void backward(const Tensor& dy, const Tensor& dx);
  // dx <- dL/dx for the training forward that returned `saved`.
  void backward(const Saved& saved, const Tensor& dy, const Tensor& dx);

  size_t numFeatures() const { return features_; }
  const SyncBatchNormOptions& options() const { return options_; }
  // Views of the layer's own fp32 storage (numFeatures() elements each).
  Tensor weight() { return view(weight_); }
  Tensor bias() { return view(bias_); }
  Tensor weightGrad() { return view(weightGrad_); }
  Tensor biasGrad() { return view(biasGrad_); }
  Tensor runningMean() { return view(runningMean_); }
  Tensor runningVar() { return view(runningVar_); }
  uint64_t numBatchesTracked() const { return batchesTracked_; }
  void zeroGrad();
  // {"<prefix>weight", "<prefix>bias"} with their gradients, for the Reducer / ZeRO (affine only).
  std::vector<layers::Parameter> parameters(const std::string& prefix = "");

 private:
  static Tensor view(std::vector<float>& v) {
    return Tensor(v.data(), v.size(), DataType::kFloat32);
  }
  // Checks x / y and returns the positions per channel (S; 1 for an empty batch, which reads
  // none).
  size_t checkShapes(const char* what, const Tensor& x, size_t batch, const Tensor& y) const;
  // Sums `v` over the group in place (no-op alone).
  void allreduce(std::vector<double>& v);
  // The group's count, mean and biased variance per channel (collective).
  struct Statistics {
    double count = 0;
    std::vector<double> mean, var;
  };
  Statistics batchStatistics(const Tensor& x, size_t batch, size_t spatial);

  std::shared_ptr<ProcessGroup> group_;
  size_t features_;
  SyncBatchNormOptions options_;
  bool training_ = true;
  std::vector<float> weight_, bias_, weightGrad_, biasGrad_, runningMean_, runningVar_;
  uint64_t batchesTracked_ = 0;

  std::shared_ptr<const Saved> last_;  // the last training forward's, for backward(dy, dx)
};

}  // namespace norm
C10D_NAMESPACE_END
}  // namespace c10d
