// Shared by the C ABI's implementation files (c10d/c_api*.cc); not installed (*_internal.h).
//
// Every exported function body runs inside guard(), which turns any C++ exception into a status
// plus this thread's last-error string, so no exception crosses the ABI. Arguments are checked
// here (NULL handles, enum values, struct sizes, the ABI version) with messages naming the
// function and the parameter; everything else is checked by the C++ core, whose message is
// passed through unchanged.
#pragma once

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/c_api.h"
#include "c10d/core/process_group.h"
#include "c10d/store/store.h"

// The handles. A handle owns one reference; release/destroy deletes it.
struct c10d_pg {
  std::shared_ptr<c10d::ProcessGroup> impl;
  // Cached so that the accessors can return pointers that live as long as the handle.
  std::string backendName;
  std::string name;
};

struct c10d_work {
  std::shared_ptr<c10d::Work> impl;
};

struct c10d_store {
  std::shared_ptr<c10d::Store> impl;
};

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace capi {

// The caller was compiled against another C10D_ABI_VERSION (C10D_STATUS_ABI_MISMATCH).
class AbiMismatch : public Error {
 public:
  explicit AbiMismatch(const std::string& msg) : Error(msg) {}
};

// "ok", "timeout", ... for a status given as an integer (any value: "unknown" if not a status).
const char* statusName(int32_t status);

// Records `message` as this thread's last error; returns `status`.
c10d_status_t fail(c10d_status_t status, const std::string& message);
// The status an exception maps to, and its text.
c10d_status_t statusOf(const std::exception_ptr& error, std::string* message);

// Runs `body`; an exception becomes its status, recorded as this thread's last error.
template <typename F>
c10d_status_t guard(F&& body) noexcept {
  try {
    body();
    return C10D_STATUS_OK;
  } catch (...) {
    std::string message;
    const c10d_status_t status = statusOf(std::current_exception(), &message);
    return fail(status, message);
  }
}

// Throws InvalidArgument "<fn>: <what> is NULL" when p is null; returns p.
template <typename T>
T* notNull(T* p, const char* fn, const char* what) {
  C10D_CHECK_ARG(p != nullptr, fn, ": ", what, " is NULL");
  return p;
}

ProcessGroup& groupOf(const c10d_pg_t* pg, const char* fn);
Store& storeOf(const c10d_store_t* store, const char* fn);

// Timeouts: C10D_TIMEOUT_DEFAULT becomes `unset`; other negative values are InvalidArgument.
Milliseconds toTimeout(int64_t ms, Milliseconds unset, const char* fn, const char* what);

// The integer behind a C enum value. A C caller may pass any int where the header says enum; C++
// may assume an enum holds one of its values (UBSan's -fsanitize=enum checks it), so the bits are
// read as an integer and range-checked before any enum-typed use.
template <typename E>
int32_t rawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t), "the C ABI's enums are 32 bits");
  int32_t v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

// The C enums, range-checked.
DataType toDataType(int32_t dtype, const char* fn, const std::string& what);
DeviceType toDeviceType(int32_t type, const char* fn, const std::string& what);
ReduceOp::Kind toReduceKind(int32_t op, const char* fn);

// Tensor views, checked (NULL, enum values, reserved field).
Tensor toTensor(const c10d_tensor_t* t, const char* fn, const char* what);
std::vector<Tensor> toTensors(const c10d_tensor_t* ts, size_t n, const char* fn, const char* what);

// Reads a caller's options struct of type T that begins with `size_t struct_size`: copies the
// fields the caller's struct_size covers over `defaults`; fields past it keep their defaults.
// Bytes past sizeof(T) (fields of a newer header) must be zero. `minSize` is the smallest size
// that still covers the mandatory leading fields. struct_size must be a multiple of alignof(T):
// every size a header can give is (it is some version's sizeof), and as no field of these structs
// is wider than 8 bytes, such a size never ends inside a field (a size that did would mix the
// caller's bytes of a pointer with the default's).
template <typename T>
T readStruct(const T* given, const T& defaults, size_t minSize, const char* fn, const char* what) {
  const size_t size = given->struct_size;
  C10D_CHECK_ARG(size >= minSize, fn, ": ", what, "->struct_size ", size,
                 " is smaller than the smallest valid size ", minSize,
                 " (initialise the struct with its c10d_*_init() function)");
  C10D_CHECK_ARG(size % alignof(T) == 0, fn, ": ", what, "->struct_size ", size,
                 " is not a multiple of ", alignof(T),
                 ": not the size of any version of the struct (initialise the struct with its "
                 "c10d_*_init() function)");
  T out = defaults;
  std::memcpy(static_cast<void*>(&out), given, size < sizeof(T) ? size : sizeof(T));
  const auto* bytes = reinterpret_cast<const unsigned char*>(given);
  for (size_t i = sizeof(T); i < size; ++i) {
    C10D_CHECK_ARG(bytes[i] == 0, fn, ": ", what, "->struct_size ", size,
                   " is larger than this library's ", sizeof(T), " and byte ", i,
                   " is not zero: the caller sets an option this library (c10d ", c10d_version(),
                   ") does not know");
  }
  out.struct_size = sizeof(T);
  return out;
}

// Throws AbiMismatch unless `abiVersion` is this library's C10D_ABI_VERSION.
void checkAbi(uint32_t abiVersion, const char* fn, const char* what);

// The group options a c10d_pg_options_t describes (checked; the ABI version included).
ProcessGroup::Options toGroupOptions(const c10d_pg_options_t* options, const char* fn);
// A store's timeout from its options (required, ABI-checked).
Milliseconds storeTimeout(const c10d_store_options_t* options, const char* fn);

// A new handle for a work; the work must not be null.
c10d_work_t* newWorkHandle(std::shared_ptr<Work> work);

}  // namespace capi
C10D_NAMESPACE_END
}  // namespace c10d
