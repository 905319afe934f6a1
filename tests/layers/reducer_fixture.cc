#include "tests/layers/reducer_fixture.h"

#include <cmath>

#include "c10d/base/abi.h"
#include "c10d/base/float16.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

TestModel::TestModel(std::vector<ParamSpec> specs) : specs_(std::move(specs)) {
  for (const ParamSpec& s : specs_) {
    const size_t words = (s.numel * elementSize(s.dtype) + 7) / 8 + 1;
    data_.emplace_back(words, 0);
    grad_.emplace_back(words, 0);
  }
}

Tensor TestModel::data(size_t p) const {
  return Tensor(const_cast<uint64_t*>(data_[p].data()), specs_[p].numel, specs_[p].dtype);
}

Tensor TestModel::grad(size_t p) const {
  return Tensor(const_cast<uint64_t*>(grad_[p].data()), specs_[p].numel, specs_[p].dtype);
}

std::vector<ddp::Parameter> TestModel::parameters() const {
  std::vector<ddp::Parameter> out;
  for (size_t p = 0; p < specs_.size(); ++p) out.push_back({specs_[p].name, data(p), grad(p)});
  return out;
}

double getValue(const Tensor& t, size_t i) {
  switch (t.dtype) {
    case DataType::kFloat32:
      return t.ptr<float>()[i];
    case DataType::kFloat64:
      return t.ptr<double>()[i];
    case DataType::kFloat16:
      return halfToFloat(t.ptr<uint16_t>()[i]);
    case DataType::kBFloat16:
      return bf16ToFloat(t.ptr<uint16_t>()[i]);
    default:
      ADD_FAILURE() << "getValue: unexpected dtype " << toString(t.dtype);
      return 0;
  }
}

void setValue(const Tensor& t, size_t i, double v) {
  switch (t.dtype) {
    case DataType::kFloat32:
      t.ptr<float>()[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      t.ptr<double>()[i] = v;
      break;
    case DataType::kFloat16:
      t.ptr<uint16_t>()[i] = floatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      t.ptr<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
      break;
    default:
      ADD_FAILURE() << "setValue: unexpected dtype " << toString(t.dtype);
  }
}

void fillTensor(const Tensor& t, const std::function<double(size_t)>& f) {
  for (size_t i = 0; i < t.numel; ++i) setValue(t, i, f(i));
}

void expectTensor(const Tensor& t, const std::function<double(size_t)>& want, double relTol,
                  const std::string& what, double absTol) {
  int reported = 0;
  for (size_t i = 0; i < t.numel && reported < 3; ++i) {
    const double got = getValue(t, i);
    const double w = want(i);
    if (std::fabs(got - w) > relTol * std::fabs(w) + absTol) {
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", want " << w;
      ++reported;
    }
  }
}

double gradValue(int rank, size_t p, size_t e, int iter) {
  return 0.5 * (rank + 1) + 0.25 * static_cast<double>(p % 16) +
         0.125 * static_cast<double>(e % 11) + iter;
}

double meanGrad(int size, size_t p, size_t e, int iter) {
  double sum = 0;
  for (int r = 0; r < size; ++r) sum += gradValue(r, p, e, iter);
  return sum / size;
}

Tensor gradOf(const ddp::Reducer& reducer, const TestModel& model, size_t p) {
  return reducer.options().gradientAsBucketView ? reducer.gradView(p) : model.grad(p);
}

void produceGrad(ddp::Reducer& reducer, const TestModel& model, int rank, size_t p, int iter) {
  fillTensor(gradOf(reducer, model, p), [&](size_t e) { return gradValue(rank, p, e, iter); });
  reducer.markReady(p);
}

std::vector<ParamSpec> mixedSpecs(size_t count) {
  std::vector<ParamSpec> specs;
  for (size_t i = 0; i < count; ++i) {
    const bool bias = i % 2 == 1;
    ParamSpec s;
    s.numel = bias ? 3 + i : 17 + 13 * i;
    s.dtype = i % 3 == 2 ? DataType::kFloat64 : DataType::kFloat32;
    s.name = "layer" + std::to_string(i / 2) + (bias ? ".bias" : ".weight");
    specs.push_back(s);
  }
  return specs;
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<BackendParam, int>>& info) {
  return paramName(std::get<0>(info.param), std::get<1>(info.param));
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
