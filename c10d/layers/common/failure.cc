#include "c10d/layers/common/failure.h"

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

std::string describeParameter(const std::vector<Parameter>& params, size_t index) {
  std::string s = "parameter " + std::to_string(index);
  if (index < params.size() && !params[index].name.empty()) {
    s += " ('" + params[index].name + "')";
  }
  return s;
}

void checkGivenGradient(const char* who, const std::vector<Parameter>& params, size_t index,
                        const Tensor& grad, const std::string& group) {
  const Tensor& data = params[index].data;
  const bool null = grad.numel > 0 && grad.data == nullptr;
  C10D_CHECK_ARG(
      grad.numel == data.numel && grad.dtype == data.dtype && grad.device == data.device && !null,
      who, ": the gradient given for ", describeParameter(params, index), " is ", grad.numel,
      " elements of ", toString(grad.dtype), " on ", toString(grad.device), null ? " (null)" : "",
      "; the parameter has ", data.numel, " elements of ", toString(data.dtype), " on ",
      toString(data.device), " (group ", group, ")");
}

void FailureLatch::check(const std::string& group) const {
  if (!first_.empty()) {
    C10D_THROW(Error, layer_, " (group ", group,
               ") is unusable after an earlier failure: ", first_);
  }
}

void FailureLatch::fail(const std::string& what, std::exception_ptr error) {
  if (first_.empty()) first_ = what + ": " + detail::messageOf(error);
  std::rethrow_exception(error);
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
