#include "c10d/base/error.h"

#include <cerrno>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace detail {

std::string messageOf(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& err) {
    return err.what();
  } catch (...) {
    return "(an exception not derived from std::exception)";
  }
}

std::exception_ptr withMessage(const std::exception_ptr& like, const std::string& message) {
  try {
    std::rethrow_exception(like);
  } catch (const TimeoutError&) {
    return std::make_exception_ptr(TimeoutError(message));
  } catch (const RevokedError& e) {
    return std::make_exception_ptr(RevokedError(message, e.revokerRank(), e.reason()));
  } catch (const CommError&) {
    return std::make_exception_ptr(CommError(message));
  } catch (const CollectiveMismatchError& e) {
    return std::make_exception_ptr(CollectiveMismatchError(message, e.skewed()));
  } catch (...) {
    return std::make_exception_ptr(Error(message));
  }
}

std::exception_ptr prefixed(const std::exception_ptr& e, const std::string& prefix) {
  return withMessage(e, prefix + messageOf(e));
}

std::string errnoName(int err) {
  switch (err) {
#define C10D_ERRNO_CASE(e) \
  case e:                  \
    return #e;
    C10D_ERRNO_CASE(EACCES)
    C10D_ERRNO_CASE(EADDRINUSE)
    C10D_ERRNO_CASE(EADDRNOTAVAIL)
    C10D_ERRNO_CASE(EAFNOSUPPORT)
    C10D_ERRNO_CASE(EAGAIN)
    C10D_ERRNO_CASE(EBADF)
    C10D_ERRNO_CASE(EBUSY)
    C10D_ERRNO_CASE(ECONNABORTED)
    C10D_ERRNO_CASE(ECONNREFUSED)
    C10D_ERRNO_CASE(ECONNRESET)
    C10D_ERRNO_CASE(EEXIST)
    C10D_ERRNO_CASE(EFAULT)
    C10D_ERRNO_CASE(EHOSTUNREACH)
    C10D_ERRNO_CASE(EINTR)
    C10D_ERRNO_CASE(EINVAL)
    C10D_ERRNO_CASE(EIO)
    C10D_ERRNO_CASE(EISDIR)
    C10D_ERRNO_CASE(EMFILE)
    C10D_ERRNO_CASE(ENETUNREACH)
    C10D_ERRNO_CASE(ENFILE)
    C10D_ERRNO_CASE(ENOBUFS)
    C10D_ERRNO_CASE(ENOENT)
    C10D_ERRNO_CASE(ENOMEM)
    C10D_ERRNO_CASE(ENOSPC)
    C10D_ERRNO_CASE(ENOSYS)
    C10D_ERRNO_CASE(ENOTCONN)
    C10D_ERRNO_CASE(ENOTDIR)
    C10D_ERRNO_CASE(EPERM)
    C10D_ERRNO_CASE(EPIPE)
    C10D_ERRNO_CASE(EROFS)
    C10D_ERRNO_CASE(ESRCH)
    C10D_ERRNO_CASE(ETIMEDOUT)
#undef C10D_ERRNO_CASE
    default:
      return str("errno ", err);
  }
}

std::string errnoString(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* msg = strerror_r(err, buf, sizeof(buf));
  const std::string name = errnoName(err);
  if (name.rfind("errno ", 0) == 0) return str(msg, " (", name, ")");
  return str(msg, " (", name, ", errno ", err, ")");
}

}  // namespace detail
C10D_NAMESPACE_END
}  // namespace c10d
