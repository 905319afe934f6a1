#include "layers/norm/sync_batch_norm.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/float16.h"

namespace c10d {
namespace norm {

namespace {

// Element i of an fp32 / bf16 host tensor, as double.
double load(const Tensor& t, size_t i) {
  if (t.dtype == DataType::kFloat32) return static_cast<const float*>(t.data)[i];
  return detail::bf16ToFloatInline(static_cast<const uint16_t*>(t.data)[i]);
}

void store(const Tensor& t, size_t i, double v) {
  if (t.dtype == DataType::kFloat32) {
    static_cast<float*>(t.data)[i] = static_cast<float>(v);
  } else {
    static_cast<uint16_t*>(t.data)[i] = detail::floatToBf16Inline(static_cast<float>(v));
  }
}

}  // namespace

SyncBatchNorm::SyncBatchNorm(std::shared_ptr<ProcessGroup> group, size_t numFeatures,
                             SyncBatchNormOptions options)
    : group_(std::move(group)),
      features_(numFeatures),
      options_(options),
      weight_(numFeatures, 1.0f),
      bias_(numFeatures, 0.0f),
      weightGrad_(numFeatures, 0.0f),
      biasGrad_(numFeatures, 0.0f),
      runningMean_(numFeatures, 0.0f),
      runningVar_(numFeatures, 1.0f),
      mean_(numFeatures),
      var_(numFeatures),
      invstd_(numFeatures) {
  C10D_CHECK_ARG(numFeatures > 0, "SyncBatchNorm: numFeatures must be > 0");
  C10D_CHECK_ARG(options.eps > 0, "SyncBatchNorm: eps must be > 0, got ", options.eps);
  C10D_CHECK_ARG(options.momentum >= 0 && options.momentum <= 1,
                 "SyncBatchNorm: momentum must be in [0, 1], got ", options.momentum);
}

void SyncBatchNorm::zeroGrad() {
  std::fill(weightGrad_.begin(), weightGrad_.end(), 0.0f);
  std::fill(biasGrad_.begin(), biasGrad_.end(), 0.0f);
}

std::vector<layers::Parameter> SyncBatchNorm::parameters(const std::string& prefix) {
  if (!options_.affine) return {};
  return {{prefix + "weight", weight(), weightGrad()}, {prefix + "bias", bias(), biasGrad()}};
}

size_t SyncBatchNorm::checkShapes(const char* what, const Tensor& x, size_t batch,
                                  const Tensor& y) const {
  C10D_CHECK_ARG(x.dtype == DataType::kFloat32 || x.dtype == DataType::kBFloat16,
                 "SyncBatchNorm::", what, ": input is ", toString(x.dtype),
                 "; float or bfloat16 only");
  C10D_CHECK_ARG(x.device.isCPU() && y.device.isCPU(), "SyncBatchNorm::", what,
                 ": host tensors only, got ", toString(x.device), " and ", toString(y.device));
  C10D_CHECK_ARG(y.dtype == x.dtype && y.numel == x.numel, "SyncBatchNorm::", what, ": output is ",
                 toString(y.dtype), " x ", y.numel, ", the input ", toString(x.dtype), " x ",
                 x.numel);
  C10D_CHECK_ARG(x.numel == 0 || x.data != nullptr, "SyncBatchNorm::", what, ": null input");
  C10D_CHECK_ARG(y.numel == 0 || y.data != nullptr, "SyncBatchNorm::", what, ": null output");
  if (batch == 0) {
    C10D_CHECK_ARG(x.numel == 0, "SyncBatchNorm::", what, ": batch 0 but ", x.numel,
                   " input elements");
    return savedSpatial_ > 0 ? savedSpatial_ : 1;
  }
  const size_t perSample = batch * features_;
  C10D_CHECK_ARG(x.numel % perSample == 0 && x.numel > 0, "SyncBatchNorm::", what, ": ", x.numel,
                 " input elements are not ", batch, " samples x ", features_,
                 " channels x a whole number of positions");
  return x.numel / perSample;
}

void SyncBatchNorm::allreduce(std::vector<double>& v) {
  if (!group_ || group_->size() == 1) return;
  group_
      ->allreduce(Tensor(v.data(), v.size(), DataType::kFloat64),
                  AllreduceOptions{ReduceOp::SUM, options_.timeout})
      ->wait(options_.timeout);
}

double SyncBatchNorm::batchStatistics(const Tensor& x, size_t batch, size_t spatial) {
  const size_t c = features_;
  std::vector<double> stats(1 + 2 * c, 0.0);  // count, sums, sums of squares
  stats[0] = static_cast<double>(batch * spatial);
  for (size_t n = 0; n < batch; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const size_t base = (n * c + ch) * spatial;
      double s = 0, q = 0;
      for (size_t i = 0; i < spatial; ++i) {
        const double v = load(x, base + i);
        s += v;
        q += v * v;
      }
      stats[1 + ch] += s;
      stats[1 + c + ch] += q;
    }
  }
  allreduce(stats);
  const double count = stats[0];
  C10D_CHECK_ARG(count > 1, "SyncBatchNorm::forward: expected more than 1 value per channel ",
                 "when training, got ", count, " over the group (", group_ ? group_->size() : 1,
                 " rank(s))");
  for (size_t ch = 0; ch < c; ++ch) {
    const double mean = stats[1 + ch] / count;
    const double var = std::max(stats[1 + c + ch] / count - mean * mean, 0.0);
    mean_[ch] = mean;
    var_[ch] = var;
    invstd_[ch] = 1.0 / std::sqrt(var + options_.eps);
  }
  return count;
}

void SyncBatchNorm::forward(const Tensor& x, size_t batch, const Tensor& y) {
  const size_t spatial = checkShapes("forward", x, batch, y);
  const size_t c = features_;
  const bool useBatchStats = training_ || !options_.trackRunningStats;
  double count = 0;
  if (useBatchStats) {
    count = batchStatistics(x, batch, spatial);
  } else {
    for (size_t ch = 0; ch < c; ++ch) {
      mean_[ch] = runningMean_[ch];
      invstd_[ch] = 1.0 / std::sqrt(static_cast<double>(runningVar_[ch]) + options_.eps);
    }
  }
  for (size_t n = 0; n < batch; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const double w = options_.affine ? weight_[ch] : 1.0;
      const double b = options_.affine ? bias_[ch] : 0.0;
      const size_t base = (n * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) {
        store(y, base + i, (load(x, base + i) - mean_[ch]) * invstd_[ch] * w + b);
      }
    }
  }
  if (!training_) return;
  if (options_.trackRunningStats) {
    const double m = options_.momentum;
    for (size_t ch = 0; ch < c; ++ch) {
      runningMean_[ch] = static_cast<float>((1 - m) * runningMean_[ch] + m * mean_[ch]);
      runningVar_[ch] =
          static_cast<float>((1 - m) * runningVar_[ch] + m * var_[ch] * count / (count - 1));
    }
    ++batchesTracked_;
  }
  savedX_ = x;
  savedBatch_ = batch;
  savedSpatial_ = spatial;
  savedCount_ = count;
  haveSaved_ = true;
}

void SyncBatchNorm::backward(const Tensor& dy, const Tensor& dx) {
  C10D_CHECK_ARG(haveSaved_, "SyncBatchNorm::backward: no training forward to differentiate");
  const Tensor& x = savedX_;
  C10D_CHECK_ARG(dy.dtype == x.dtype && dy.numel == x.numel, "SyncBatchNorm::backward: dy is ",
                 toString(dy.dtype), " x ", dy.numel, ", the forward's input ", toString(x.dtype),
                 " x ", x.numel);
  checkShapes("backward", dy, savedBatch_, dx);
  const size_t c = features_;
  const size_t spatial = savedSpatial_;
  std::vector<double> sums(2 * c, 0.0);  // sum(dy), sum(dy * (x - mean))
  for (size_t n = 0; n < savedBatch_; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const size_t base = (n * c + ch) * spatial;
      double s = 0, sx = 0;
      for (size_t i = 0; i < spatial; ++i) {
        const double g = load(dy, base + i);
        s += g;
        sx += g * (load(x, base + i) - mean_[ch]);
      }
      sums[ch] += s;
      sums[c + ch] += sx;
    }
  }
  if (options_.affine) {
    for (size_t ch = 0; ch < c; ++ch) {
      weightGrad_[ch] += static_cast<float>(sums[c + ch] * invstd_[ch]);
      biasGrad_[ch] += static_cast<float>(sums[ch]);
    }
  }
  allreduce(sums);
  const double count = savedCount_;
  for (size_t n = 0; n < savedBatch_; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const double w = options_.affine ? weight_[ch] : 1.0;
      const double meanDy = sums[ch] / count;
      const double meanDyXmu = sums[c + ch] / count;
      const double is = invstd_[ch];
      const size_t base = (n * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) {
        const double xmu = load(x, base + i) - mean_[ch];
        store(dx, base + i, (load(dy, base + i) - meanDy - xmu * is * is * meanDyXmu) * is * w);
      }
    }
  }
}

}  // namespace norm
}  // namespace c10d
