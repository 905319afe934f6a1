// Shared pieces of the ZeRO tests: a toy fp32 model that owns its parameter and gradient memory,
// the gradient each (rank, parameter, element, step) produces, and the reference every ZeRO run
// is compared with: one unsharded FlatOptimizer over all parameters stepped with the mean
// gradient. Gradients are multiples of 1/4 in [-11/4, 11/4]: every partial sum over up to 8 ranks
// is exact in fp32 whatever order a backend adds in, so the mean (sum / world size, one fp32
// division, as ShardedOptimizer does) and everything after it must match the reference bit for
// bit. Every test runs in forked ranks over each CPU backend at world sizes 1-4
// (tests/backends/conformance.h).
#pragma once

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "c10d/layers/zero/sharded_optimizer.h"
#include "tests/backends/conformance.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

class ZeroModel {
 public:
  // Parameters of these sizes ("p<i>"), data seeded by `rank` (so rank 0's broadcast shows).
  ZeroModel(const std::vector<size_t>& numels, int rank);
  size_t size() const { return data_.size(); }
  std::vector<layers::Parameter> parameters();
  std::vector<float>& data(size_t p) { return data_[p]; }
  std::vector<float>& grad(size_t p) { return grad_[p]; }
  const std::vector<size_t>& numels() const { return numels_; }
  // Writes this rank's gradient of `step` into every grad.
  void produceGrads(int rank, int step);

 private:
  std::vector<size_t> numels_;
  std::vector<std::string> names_;
  std::vector<std::vector<float>> data_;
  std::vector<std::vector<float>> grad_;
};

float initialValue(int rank, size_t p, size_t e);
float gradValue(int rank, size_t p, size_t e, int step);

// One FlatOptimizer over all parameters back to back, started from rank 0's initial values.
class ReferenceOptimizer {
 public:
  // With parameter groups (each listed parameter steps with its group's lr and weight decay) and
  // a gradient clip (the mean gradient's norm over every parameter, computed in double; scaled by
  // the fp32 rounding of maxNorm / (norm + 1e-6) when above maxNorm): written out here from
  // torch's definitions, not with the layers' helpers.
  ReferenceOptimizer(const optim::OptimizerOptions& options, const std::vector<size_t>& numels,
                     std::vector<optim::ParamGroup> groups = {}, zero::GradClip clip = {});
  // One step with the mean over ranks [0, worldSize) of gradValue(., ., ., step).
  void step(int worldSize, int step);
  double lastNorm() const { return lastNorm_; }  // before clipping; 0 without a clip
  // Expects every parameter of `model` to equal the reference bit for bit.
  void expectParamsEqual(ZeroModel& model, const std::string& what) const;
  optim::OptimizerState state() const;
  const float* param(size_t p) const { return params_.data() + offsets_[p]; }

 private:
  std::vector<size_t> numels_;
  std::vector<size_t> offsets_;
  std::vector<float> params_;
  optim::FlatOptimizer opt_;
  std::vector<optim::ParamGroup> groups_;
  zero::GradClip clip_;
  double lastNorm_ = 0;
};

// Whether a[0, n) and b[0, n) hold the same bits (n == 0: true, whatever the pointers).
inline bool sameBits(const float* a, const float* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}

// Expects two states to be equal: options, steps, slot names, every slot bit for bit.
void expectStateEqual(const optim::OptimizerState& got, const optim::OptimizerState& want,
                      const std::string& what);

// SGD with momentum + Nesterov + weight decay, Adam with L2, AdamW.
std::vector<optim::OptimizerOptions> referenceOptimizers();

// Runs f and expects it to throw Exc whose message contains every one of `parts`.
template <typename Exc, typename F>
void expectThrowWith(F&& f, const std::vector<std::string>& parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception";
  } catch (const Exc& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(msg.find(part), std::string::npos)
          << what << ": message \"" << msg << "\" lacks \"" << part << "\"";
    }
  }
}

class ZeroTest : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {
 protected:
  BackendParam p() const { return std::get<0>(GetParam()); }
  int ws() const { return std::get<1>(GetParam()); }
};

std::string zeroCaseName(const ::testing::TestParamInfo<std::tuple<BackendParam, int>>& info);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
