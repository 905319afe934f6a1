// Shared pieces of the Reducer tests: a toy model that owns parameter and gradient memory, the
// gradient values each (rank, parameter, element, iteration) produces, and their reference mean.
// Every test runs in forked ranks over each CPU backend at world sizes 1-4
// (tests/backends/conformance.h).
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/layers/ddp/reducer.h"
#include "tests/backends/conformance.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct ParamSpec {
  size_t numel = 0;
  DataType dtype = DataType::kFloat32;
  std::string name;
};

// Owns data and grad memory for each parameter (f32 / f64).
class TestModel {
 public:
  explicit TestModel(std::vector<ParamSpec> specs);
  size_t size() const { return specs_.size(); }
  const ParamSpec& spec(size_t p) const { return specs_[p]; }
  Tensor data(size_t p) const;
  Tensor grad(size_t p) const;
  // Parameters for the Reducer (grads attached unless gradientAsBucketView).
  std::vector<ddp::Parameter> parameters() const;
  const std::vector<ParamSpec>& specs() const { return specs_; }

 private:
  std::vector<ParamSpec> specs_;
  std::vector<std::vector<uint64_t>> data_;
  std::vector<std::vector<uint64_t>> grad_;
};

// Element access on f32 / f64 / f16 / bf16 host tensors.
double getValue(const Tensor& t, size_t i);
void setValue(const Tensor& t, size_t i, double v);
void fillTensor(const Tensor& t, const std::function<double(size_t)>& f);
// Expects t[i] == want(i) within relTol * |want| + absTol; reports the first few mismatches.
void expectTensor(const Tensor& t, const std::function<double(size_t)>& want, double relTol,
                  const std::string& what, double absTol = 1e-12);

// Gradient of element e of parameter p on `rank` in iteration `iter`: exact in f32.
double gradValue(int rank, size_t p, size_t e, int iter);
// Its mean over ranks [0, size).
double meanGrad(int size, size_t p, size_t e, int iter);

// Where the framework's gradient of p lives: the bucket view or the model's own grad.
Tensor gradOf(const ddp::Reducer& reducer, const TestModel& model, size_t p);

// Writes gradValue(rank, p, ., iter) into p's gradient and marks it ready.
void produceGrad(ddp::Reducer& reducer, const TestModel& model, int rank, size_t p, int iter);

// A model of mixed f32 / f64 parameters of varied sizes ("layerK.weight" / "layerK.bias").
std::vector<ParamSpec> mixedSpecs(size_t count);

class ReducerTest : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {
 protected:
  BackendParam p() const { return std::get<0>(GetParam()); }
  int ws() const { return std::get<1>(GetParam()); }
};

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

std::string caseName(const ::testing::TestParamInfo<std::tuple<BackendParam, int>>& info);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
