#include "examples/train_mlp/dataset.h"

#include <algorithm>
#include <cmath>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "examples/train_mlp/random.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

namespace {

constexpr size_t kTeacherHidden = 64;

}  // namespace

SyntheticDataset::SyntheticDataset(const DatasetOptions& options) : options_(options) {
  C10D_CHECK_ARG(options.trainSize >= 1, "--dataset-size must be >= 1");
  C10D_CHECK_ARG(options.evalSize >= 1, "--eval-size must be >= 1");
  const size_t in = options.inputDim;
  const size_t classes = options.classes;
  const size_t total = options.trainSize + options.evalSize;

  // The teacher: weights N(0, 1 / fan_in), no biases (so no class is favoured by construction).
  Rng teacherRng = Rng::forStream(options.seed, kTeacherStream);
  std::vector<double> w1(kTeacherHidden * in), w2(classes * kTeacherHidden);
  for (double& v : w1) v = teacherRng.normal() / std::sqrt(static_cast<double>(in));
  for (double& v : w2) v = teacherRng.normal() / std::sqrt(static_cast<double>(kTeacherHidden));

  inputs_.resize(total * in);
  labels_.resize(total);
  std::vector<double> h(kTeacherHidden), out(classes);
  for (size_t i = 0; i < total; ++i) {
    Rng rng = Rng::forStream(options.seed, kInputStream, i);
    float* x = inputs_.data() + i * in;
    for (size_t k = 0; k < in; ++k) x[k] = static_cast<float>(rng.normal());
    for (size_t j = 0; j < kTeacherHidden; ++j) {
      double s = 0;
      for (size_t k = 0; k < in; ++k) s += w1[j * in + k] * x[k];
      h[j] = s > 0 ? s : 0;
    }
    for (size_t c = 0; c < classes; ++c) {
      double s = 0;
      for (size_t j = 0; j < kTeacherHidden; ++j) s += w2[c * kTeacherHidden + j] * h[j];
      out[c] = s;
    }
    labels_[i] = static_cast<int32_t>(std::max_element(out.begin(), out.end()) - out.begin());
  }
}

void SyntheticDataset::gather(const std::vector<size_t>& indices, std::vector<float>* x,
                              std::vector<int32_t>* labels) const {
  const size_t in = inputDim();
  x->resize(indices.size() * in);
  labels->resize(indices.size());
  for (size_t j = 0; j < indices.size(); ++j) {
    const size_t i = indices[j];
    C10D_CHECK_LT(i, options_.trainSize, "training sample index");
    std::copy(inputs_.begin() + i * in, inputs_.begin() + (i + 1) * in, x->begin() + j * in);
    (*labels)[j] = labels_[i];
  }
}

std::vector<size_t> SyntheticDataset::classCounts() const {
  std::vector<size_t> counts(options_.classes, 0);
  for (size_t i = 0; i < options_.trainSize; ++i) ++counts[labels_[i]];
  return counts;
}

BatchPlan::BatchPlan(size_t trainSize, size_t globalBatch, int worldSize, int rank, uint64_t seed)
    : global_(globalBatch),
      micro_(worldSize > 0 ? globalBatch / static_cast<size_t>(worldSize) : 0),
      stepsPerEpoch_(globalBatch > 0 ? trainSize / globalBatch : 0),
      sampler_(trainSize, worldSize, rank, data::DistributedSampler::Options{true, seed, false}) {
  C10D_CHECK_ARG(globalBatch >= 1, "--global-batch must be >= 1");
  C10D_CHECK_ARG(globalBatch % static_cast<size_t>(worldSize) == 0, "--global-batch ", globalBatch,
                 " is not divisible by the world size ", worldSize,
                 ": every rank takes an equal micro-batch of global-batch / world-size samples "
                 "(use a multiple of ",
                 worldSize, ", e.g. ", (globalBatch / worldSize + 1) * worldSize, ")");
  C10D_CHECK_ARG(trainSize >= globalBatch, "--dataset-size ", trainSize,
                 " is smaller than --global-batch ", globalBatch, ": not one full batch");
}

std::vector<size_t> BatchPlan::indices(uint64_t step) {
  C10D_CHECK_ARG(step >= 1, "steps are numbered from 1 (got ", step, ")");
  const uint64_t epoch = epochOf(step);
  if (!cached_ || sampler_.epoch() != epoch) {
    sampler_.setEpoch(epoch);
    epochIndices_ = sampler_.indices();
    cached_ = true;
  }
  const size_t j = static_cast<size_t>((step - 1) % stepsPerEpoch_);
  return std::vector<size_t>(epochIndices_.begin() + j * micro_,
                             epochIndices_.begin() + (j + 1) * micro_);
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
