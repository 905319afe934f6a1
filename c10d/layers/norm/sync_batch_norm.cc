#include "c10d/layers/norm/sync_batch_norm.h"

#include <algorithm>
#include <cmath>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/float16.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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
      runningVar_(numFeatures, 1.0f) {
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
    return 1;
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

SyncBatchNorm::Statistics SyncBatchNorm::batchStatistics(const Tensor& x, size_t batch,
                                                         size_t spatial) {
  const size_t c = features_;
  // This rank's [count, means, M2s]: two passes over its own values.
  std::vector<double> mine(1 + 2 * c, 0.0);
  const double n = static_cast<double>(batch * spatial);
  mine[0] = n;
  for (size_t ch = 0; ch < c && batch > 0; ++ch) {
    double s = 0;
    for (size_t b = 0; b < batch; ++b) {
      const size_t base = (b * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) s += load(x, base + i);
    }
    const double mean = s / n;
    double m2 = 0;
    for (size_t b = 0; b < batch; ++b) {
      const size_t base = (b * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) {
        const double d = load(x, base + i) - mean;
        m2 += d * d;
      }
    }
    mine[1 + ch] = mean;
    mine[1 + c + ch] = m2;
  }
  const int ranks = group_ ? group_->size() : 1;
  std::vector<double> all = mine;
  if (ranks > 1) {
    all.assign(mine.size() * static_cast<size_t>(ranks), 0.0);
    group_
        ->allgatherIntoTensor(Tensor(all.data(), all.size(), DataType::kFloat64),
                              Tensor(mine.data(), mine.size(), DataType::kFloat64),
                              AllgatherOptions{options_.timeout})
        ->wait(options_.timeout);
  }
  // Chan et al.'s pairwise combination, in rank order (the same bits on every rank).
  Statistics st;
  st.mean.assign(c, 0.0);
  st.var.assign(c, 0.0);
  std::vector<double> m2(c, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const double* part = all.data() + static_cast<size_t>(r) * mine.size();
    const double nb = part[0];
    if (nb == 0) continue;
    const double na = st.count;
    st.count = na + nb;
    for (size_t ch = 0; ch < c; ++ch) {
      const double delta = part[1 + ch] - st.mean[ch];
      st.mean[ch] += delta * (nb / st.count);
      m2[ch] += part[1 + c + ch] + delta * delta * (na * nb / st.count);
    }
  }
  C10D_CHECK_ARG(st.count > 1, "SyncBatchNorm::forward: expected more than 1 value per channel ",
                 "when training, got ", st.count, " over the group (", ranks, " rank(s))");
  for (size_t ch = 0; ch < c; ++ch) st.var[ch] = m2[ch] / st.count;
  return st;
}

std::shared_ptr<const SyncBatchNorm::Saved> SyncBatchNorm::forward(const Tensor& x, size_t batch,
                                                                   const Tensor& y) {
  const size_t spatial = checkShapes("forward", x, batch, y);
  const size_t c = features_;
  const bool useBatchStats = training_ || !options_.trackRunningStats;
  auto saved = std::make_shared<Saved>();
  saved->mean.resize(c);
  saved->invstd.resize(c);
  Statistics st;
  if (useBatchStats) {
    st = batchStatistics(x, batch, spatial);
    for (size_t ch = 0; ch < c; ++ch) {
      saved->mean[ch] = st.mean[ch];
      saved->invstd[ch] = 1.0 / std::sqrt(st.var[ch] + options_.eps);
    }
  } else {
    for (size_t ch = 0; ch < c; ++ch) {
      saved->mean[ch] = runningMean_[ch];
      saved->invstd[ch] = 1.0 / std::sqrt(static_cast<double>(runningVar_[ch]) + options_.eps);
    }
  }
  for (size_t n = 0; n < batch; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const double w = options_.affine ? weight_[ch] : 1.0;
      const double b = options_.affine ? bias_[ch] : 0.0;
      const size_t base = (n * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) {
        store(y, base + i, (load(x, base + i) - saved->mean[ch]) * saved->invstd[ch] * w + b);
      }
    }
  }
  if (!training_) return nullptr;
  if (options_.trackRunningStats) {
    const double m = options_.momentum;
    for (size_t ch = 0; ch < c; ++ch) {
      runningMean_[ch] = static_cast<float>((1 - m) * runningMean_[ch] + m * st.mean[ch]);
      runningVar_[ch] = static_cast<float>((1 - m) * runningVar_[ch] +
                                           m * st.var[ch] * st.count / (st.count - 1));
    }
    ++batchesTracked_;
  }
  saved->x = x;
  saved->batch = batch;
  saved->spatial = spatial;
  saved->count = st.count;
  last_ = saved;
  return saved;
}

void SyncBatchNorm::backward(const Tensor& dy, const Tensor& dx) {
  C10D_CHECK_ARG(last_ != nullptr, "SyncBatchNorm::backward: no training forward to differentiate");
  backward(*last_, dy, dx);
}

void SyncBatchNorm::backward(const Saved& saved, const Tensor& dy, const Tensor& dx) {
  const Tensor& x = saved.x;
  C10D_CHECK_ARG(dy.dtype == x.dtype && dy.numel == x.numel, "SyncBatchNorm::backward: dy is ",
                 toString(dy.dtype), " x ", dy.numel, ", the forward's input ", toString(x.dtype),
                 " x ", x.numel);
  checkShapes("backward", dy, saved.batch, dx);
  const size_t c = features_;
  const size_t spatial = saved.spatial;
  const std::vector<double>& mean = saved.mean;
  const std::vector<double>& invstd = saved.invstd;
  std::vector<double> sums(2 * c, 0.0);  // sum(dy), sum(dy * (x - mean))
  for (size_t n = 0; n < saved.batch; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const size_t base = (n * c + ch) * spatial;
      double s = 0, sx = 0;
      for (size_t i = 0; i < spatial; ++i) {
        const double g = load(dy, base + i);
        s += g;
        sx += g * (load(x, base + i) - mean[ch]);
      }
      sums[ch] += s;
      sums[c + ch] += sx;
    }
  }
  if (options_.affine) {
    for (size_t ch = 0; ch < c; ++ch) {
      weightGrad_[ch] += static_cast<float>(sums[c + ch] * invstd[ch]);
      biasGrad_[ch] += static_cast<float>(sums[ch]);
    }
  }
  allreduce(sums);
  const double count = saved.count;
  for (size_t n = 0; n < saved.batch; ++n) {
    for (size_t ch = 0; ch < c; ++ch) {
      const double w = options_.affine ? weight_[ch] : 1.0;
      const double meanDy = sums[ch] / count;
      const double meanDyXmu = sums[c + ch] / count;
      const double is = invstd[ch];
      const size_t base = (n * c + ch) * spatial;
      for (size_t i = 0; i < spatial; ++i) {
        const double xmu = load(x, base + i) - mean[ch];
        store(dx, base + i, (load(dy, base + i) - meanDy - xmu * is * is * meanDyXmu) * is * w);
      }
    }
  }
}

}  // namespace norm
C10D_NAMESPACE_END
}  // namespace c10d
