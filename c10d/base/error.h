// c10d error hierarchy.
//
// Every failure c10d reports is one of these types (or derived from them):
//   Error            base class; anything unexpected (a failed syscall, a broken invariant)
//   InvalidArgument  the caller passed something wrong; raised before any communication
//   TimeoutError     a blocking call ran past its timeout; names op / key / sequence number
//   CommError        a peer died or a connection was lost; names the peer where known
//   RevokedError (a CommError) the group was revoked (ProcessGroup::revoke); names who and why
//   CollectiveMismatchError (an InvalidArgument) ranks called collectives that do not match
//
// Messages are written for the person reading a log of 8 ranks: they name the rank, the op, the
// sequence number, the key or the sizes involved. The C10D_CHECK* macros print both values of a
// failed comparison plus file:line, in the spirit of Gloo's GLOO_ENFORCE.
#pragma once

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& msg) : Error(msg) {}
};

class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& msg) : Error(msg) {}
};

class CommError : public Error {
 public:
  explicit CommError(const std::string& msg) : Error(msg) {}
};

// The group was revoked (ProcessGroup::revoke, docs/fault-tolerance.md): every live rank's pending
// and later ops on it fail with this. A CommError, so code that handles a lost peer handles it too.
// revokerRank(): the rank that revoked first (-1 when unknown: this rank was fenced out by an
// agreement that declared it failed); reason(): what it said.
class RevokedError : public CommError {
 public:
  RevokedError(const std::string& msg, int revokerRank, std::string reason)
      : CommError(msg), revokerRank_(revokerRank), reason_(std::move(reason)) {}
  int revokerRank() const { return revokerRank_; }
  const std::string& reason() const { return reason_; }

 private:
  int revokerRank_;
  std::string reason_;
};

// Two ranks called collectives that do not match: different ops, counts, dtypes, roots, reduce
// ops, or one rank is ahead of the other by whole collectives. Raised on every rank of the op
// (the rank that notices tells the others); the group is broken afterwards.
class CollectiveMismatchError : public InvalidArgument {
 public:
  // skewed: the ranks are at different collectives (one skipped or added one), not at the same
  // collective with different arguments.
  explicit CollectiveMismatchError(const std::string& msg, bool skewed = false)
      : InvalidArgument(msg), skewed_(skewed) {}
  bool skewed() const { return skewed_; }

 private:
  bool skewed_;
};

namespace detail {

// Concatenates any streamable arguments into one string.
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}

// The symbolic name of an errno value ("EADDRINUSE"), or "errno N" for uncommon ones.
std::string errnoName(int err);
// Describes errno `err`: "Address already in use (EADDRINUSE, errno 98)".
std::string errnoString(int err);

// The message of the exception in `e` (what()), or a note that it is not a std::exception.
std::string messageOf(const std::exception_ptr& e);

// An exception of the same kind as `like` (TimeoutError, CommError, CollectiveMismatchError, else
// Error) carrying `message`: how a backend re-words an error without changing what callers catch.
std::exception_ptr withMessage(const std::exception_ptr& like, const std::string& message);

// `e` re-made with `prefix` before its message, keeping its kind (as withMessage): how a later op
// reports the error that broke its group.
std::exception_ptr prefixed(const std::exception_ptr& e, const std::string& prefix);

}  // namespace detail

C10D_NAMESPACE_END
}  // namespace c10d

// Throws `Exc` with the streamed message and the source location.
#define C10D_THROW(Exc, ...) \
  throw Exc(::c10d::detail::str(__VA_ARGS__, " [", __FILE__, ":", __LINE__, "]"))

// Throws InvalidArgument unless `cond` holds.
#define C10D_CHECK_ARG(cond, ...)                                  \
  do {                                                             \
    if (!(cond)) C10D_THROW(::c10d::InvalidArgument, __VA_ARGS__); \
  } while (0)

// Throws Error unless `cond` holds (an internal invariant).
#define C10D_CHECK(cond, ...)                                                           \
  do {                                                                                  \
    if (!(cond)) C10D_THROW(::c10d::Error, "check failed: " #cond ": ", ##__VA_ARGS__); \
  } while (0)

// Throws Error naming both operands unless `a op b`.
#define C10D_CHECK_OP(a, op, b, ...)                                                               \
  do {                                                                                             \
    const auto& c10d_a_ = (a);                                                                     \
    const auto& c10d_b_ = (b);                                                                     \
    if (!(c10d_a_ op c10d_b_))                                                                     \
      C10D_THROW(::c10d::Error, "check failed: " #a " " #op " " #b " (", c10d_a_, " vs ", c10d_b_, \
                 ") ", ##__VA_ARGS__);                                                             \
  } while (0)
#define C10D_CHECK_EQ(a, b, ...) C10D_CHECK_OP(a, ==, b, ##__VA_ARGS__)
#define C10D_CHECK_NE(a, b, ...) C10D_CHECK_OP(a, !=, b, ##__VA_ARGS__)
#define C10D_CHECK_LT(a, b, ...) C10D_CHECK_OP(a, <, b, ##__VA_ARGS__)
#define C10D_CHECK_LE(a, b, ...) C10D_CHECK_OP(a, <=, b, ##__VA_ARGS__)
#define C10D_CHECK_GE(a, b, ...) C10D_CHECK_OP(a, >=, b, ##__VA_ARGS__)

// Throws Error naming the failed syscall and errno if `expr` returns -1.
#define C10D_SYSCHECK(expr, ...)                                                                \
  do {                                                                                          \
    if ((expr) == -1) {                                                                         \
      int c10d_err_ = errno;                                                                    \
      C10D_THROW(::c10d::Error, #expr " failed: ", ::c10d::detail::errnoString(c10d_err_), " ", \
                 ##__VA_ARGS__);                                                                \
    }                                                                                           \
  } while (0)
