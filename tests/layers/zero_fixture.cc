#include "tests/layers/zero_fixture.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

float initialValue(int rank, size_t p, size_t e) {
  return static_cast<float>(static_cast<int>((p * 7 + e * 3) % 19) - 9) * 0.125f +
         static_cast<float>(rank) * 100.0f;
}

float gradValue(int rank, size_t p, size_t e, int step) {
  const size_t k = static_cast<size_t>(rank) * 5 + p * 3 + e * 7 + static_cast<size_t>(step) * 11;
  return static_cast<float>(static_cast<int>(k % 23) - 11) * 0.25f;
}

ZeroModel::ZeroModel(const std::vector<size_t>& numels, int rank) : numels_(numels) {
  for (size_t p = 0; p < numels.size(); ++p) {
    names_.push_back("p" + std::to_string(p));
    data_.emplace_back(numels[p]);
    grad_.emplace_back(numels[p], 0.0f);
    for (size_t e = 0; e < numels[p]; ++e) data_[p][e] = initialValue(rank, p, e);
  }
}

std::vector<layers::Parameter> ZeroModel::parameters() {
  std::vector<layers::Parameter> out;
  for (size_t p = 0; p < size(); ++p) {
    out.push_back({names_[p], tensorOf(data_[p].data(), data_[p].size()),
                   tensorOf(grad_[p].data(), grad_[p].size())});
  }
  return out;
}

void ZeroModel::produceGrads(int rank, int step) {
  for (size_t p = 0; p < size(); ++p) {
    for (size_t e = 0; e < numels_[p]; ++e) grad_[p][e] = gradValue(rank, p, e, step);
  }
}

namespace {
size_t total(const std::vector<size_t>& numels) {
  size_t n = 0;
  for (size_t x : numels) n += x;
  return n;
}
}  // namespace

ReferenceOptimizer::ReferenceOptimizer(const optim::OptimizerOptions& options,
                                       const std::vector<size_t>& numels,
                                       std::vector<optim::ParamGroup> groups, zero::GradClip clip)
    : numels_(numels), opt_(options, total(numels)), groups_(std::move(groups)), clip_(clip) {
  size_t off = 0;
  for (size_t p = 0; p < numels.size(); ++p) {
    offsets_.push_back(off);
    for (size_t e = 0; e < numels[p]; ++e) params_.push_back(initialValue(0, p, e));
    off += numels[p];
  }
}

void ReferenceOptimizer::step(int worldSize, int step) {
  std::vector<float> mean;
  mean.reserve(params_.size());
  for (size_t p = 0; p < numels_.size(); ++p) {
    for (size_t e = 0; e < numels_[p]; ++e) {
      double sum = 0;  // exact: quarters, at most 8 ranks
      for (int r = 0; r < worldSize; ++r) sum += gradValue(r, p, e, step);
      mean.push_back(static_cast<float>(sum) / static_cast<float>(worldSize));
    }
  }
  if (clip_.maxNorm > 0) {  // torch.nn.utils.clip_grad_norm_
    double acc = 0;
    for (float g : mean) {
      const double a = std::fabs(static_cast<double>(g));
      acc = std::isinf(clip_.normType) ? std::max(acc, a) : acc + std::pow(a, clip_.normType);
    }
    lastNorm_ = std::isinf(clip_.normType) ? acc : std::pow(acc, 1.0 / clip_.normType);
    if (clip_.normType == 2.0) lastNorm_ = std::sqrt(acc);
    // torch's clip_coef for fp32 grads: max_norm / (total_norm + 1e-6) with an fp32 total_norm,
    // where a number over a tensor is reciprocal() * number (two fp32 roundings).
    const float denominator = static_cast<float>(lastNorm_) + 1e-6f;
    const float coef = (1.0f / denominator) * static_cast<float>(clip_.maxNorm);
    if (coef < 1.0f) {
      for (float& g : mean) g *= coef;
    }
  }
  // Per-parameter hyper-parameters: one span per parameter of a group.
  std::vector<optim::Span> spans;
  for (size_t p = 0; p < numels_.size(); ++p) {
    for (const optim::ParamGroup& g : groups_) {
      if (std::find(g.params.begin(), g.params.end(), p) == g.params.end()) continue;
      spans.push_back({offsets_[p], offsets_[p] + numels_[p], g.lr, g.weightDecay});
    }
  }
  opt_.step(params_.data(), mean.data(), spans);
}

void ReferenceOptimizer::expectParamsEqual(ZeroModel& model, const std::string& what) const {
  for (size_t p = 0; p < numels_.size(); ++p) {
    const float* want = param(p);
    const std::vector<float>& got = model.data(p);
    for (size_t e = 0; e < numels_[p]; ++e) {
      if (std::memcmp(&got[e], &want[e], sizeof(float)) != 0) {
        ADD_FAILURE() << what << ": parameter " << p << "[" << e << "] is " << got[e]
                      << ", the reference " << want[e];
        return;  // one report per parameter set is enough
      }
    }
  }
}

optim::OptimizerState ReferenceOptimizer::state() const {
  return optim::OptimizerState::fromFlat(opt_, numels_);
}

void expectStateEqual(const optim::OptimizerState& got, const optim::OptimizerState& want,
                      const std::string& what) {
  std::string field;
  EXPECT_TRUE(optim::sameOptions(got.options, want.options, &field)) << what << ": " << field;
  EXPECT_EQ(got.steps, want.steps) << what;
  EXPECT_EQ(got.slotNames, want.slotNames) << what;
  ASSERT_EQ(got.slots.size(), want.slots.size()) << what;
  for (size_t p = 0; p < got.slots.size(); ++p) {
    ASSERT_EQ(got.slots[p].size(), want.slots[p].size()) << what << ": parameter " << p;
    for (size_t k = 0; k < got.slots[p].size(); ++k) {
      ASSERT_EQ(got.slots[p][k].size(), want.slots[p][k].size()) << what;
      EXPECT_TRUE(sameBits(got.slots[p][k].data(), want.slots[p][k].data(), got.slots[p][k].size()))
          << what << ": parameter " << p << " slot " << got.slotNames[k];
    }
  }
}

std::vector<optim::OptimizerOptions> referenceOptimizers() {
  std::vector<optim::OptimizerOptions> out;
  optim::OptimizerOptions sgd;
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weightDecay = 0.01;
  out.push_back(sgd);
  optim::OptimizerOptions adam;
  adam.algorithm = optim::Algorithm::kAdam;
  adam.lr = 0.01;
  adam.weightDecay = 0.1;
  out.push_back(adam);
  optim::OptimizerOptions adamw;
  adamw.algorithm = optim::Algorithm::kAdamW;
  adamw.lr = 0.02;
  adamw.beta1 = 0.8;
  adamw.weightDecay = 0.05;
  out.push_back(adamw);
  return out;
}

std::string zeroCaseName(const ::testing::TestParamInfo<std::tuple<BackendParam, int>>& info) {
  return paramName(std::get<0>(info.param), std::get<1>(info.param));
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
