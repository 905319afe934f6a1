#include "layers/common/failure.h"

#include "base/error.h"

namespace c10d {
namespace layers {

std::string describeParameter(const std::vector<Parameter>& params, size_t index) {
  std::string s = "parameter " + std::to_string(index);
  if (index < params.size() && !params[index].name.empty()) {
    s += " ('" + params[index].name + "')";
  }
  return s;
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
}  // namespace c10d
