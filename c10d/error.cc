#include "c10d/error.h"

#include <cstring>

namespace c10d {
namespace detail {

std::exception_ptr prefixed(const std::exception_ptr& e, const std::string& prefix) {
  try {
    std::rethrow_exception(e);
  } catch (const TimeoutError& err) {
    return std::make_exception_ptr(TimeoutError(prefix + err.what()));
  } catch (const CommError& err) {
    return std::make_exception_ptr(CommError(prefix + err.what()));
  } catch (const CollectiveMismatchError& err) {
    return std::make_exception_ptr(CollectiveMismatchError(prefix + err.what()));
  } catch (const std::exception& err) {
    return std::make_exception_ptr(Error(prefix + err.what()));
  } catch (...) {
    return std::make_exception_ptr(
        Error(prefix + "(an exception not derived from std::exception)"));
  }
}

std::string errnoString(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* msg = strerror_r(err, buf, sizeof(buf));
  return str(msg, " (errno ", err, ")");
}

}  // namespace detail
}  // namespace c10d
