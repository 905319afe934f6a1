// C ABI: errors, versions, and the conversions every other c_api file uses.
#include <cstddef>
#include <map>
#include <new>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/c_api_internal.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace capi {

namespace {

thread_local std::string tlsLastError;

// One place that knows how the C enums line up with the C++ ones.
static_assert(C10D_FLOAT32 == static_cast<int>(DataType::kFloat32) &&
                  C10D_FLOAT64 == static_cast<int>(DataType::kFloat64) &&
                  C10D_FLOAT16 == static_cast<int>(DataType::kFloat16) &&
                  C10D_BFLOAT16 == static_cast<int>(DataType::kBFloat16) &&
                  C10D_INT8 == static_cast<int>(DataType::kInt8) &&
                  C10D_UINT8 == static_cast<int>(DataType::kUInt8) &&
                  C10D_INT32 == static_cast<int>(DataType::kInt32) &&
                  C10D_INT64 == static_cast<int>(DataType::kInt64) &&
                  C10D_BOOL == static_cast<int>(DataType::kBool) && kNumDataTypes == 9,
              "c10d_dtype_t and c10d::DataType disagree");
static_assert(C10D_DEVICE_CPU == static_cast<int>(DeviceType::kCPU) &&
                  C10D_DEVICE_CUDA == static_cast<int>(DeviceType::kCUDA),
              "c10d_device_type_t and c10d::DeviceType disagree");
static_assert(C10D_REDUCE_SUM == int{ReduceOp::SUM} && C10D_REDUCE_AVG == int{ReduceOp::AVG} &&
                  C10D_REDUCE_PRODUCT == int{ReduceOp::PRODUCT} &&
                  C10D_REDUCE_MIN == int{ReduceOp::MIN} && C10D_REDUCE_MAX == int{ReduceOp::MAX} &&
                  C10D_REDUCE_BAND == int{ReduceOp::BAND} &&
                  C10D_REDUCE_BOR == int{ReduceOp::BOR} &&
                  C10D_REDUCE_BXOR == int{ReduceOp::BXOR} &&
                  C10D_REDUCE_PREMUL_SUM == int{ReduceOp::PREMUL_SUM} && ReduceOp::kNumKinds == 9,
              "c10d_reduce_op_t and c10d::ReduceOp::Kind disagree");
// The layouts FFI users rely on (x86-64 / aarch64 LP64).
static_assert(sizeof(c10d_tensor_t) == 32 && offsetof(c10d_tensor_t, numel) == 8 &&
                  offsetof(c10d_tensor_t, dtype) == 16 &&
                  offsetof(c10d_tensor_t, device_index) == 24,
              "c10d_tensor_t layout changed: that is an ABI change (bump C10D_ABI_VERSION)");

}  // namespace

const char* statusName(int32_t status) {
  switch (status) {
    case C10D_STATUS_OK:
      return "ok";
    case C10D_STATUS_INVALID_ARGUMENT:
      return "invalid_argument";
    case C10D_STATUS_TIMEOUT:
      return "timeout";
    case C10D_STATUS_COMM_ERROR:
      return "comm_error";
    case C10D_STATUS_ERROR:
      return "error";
    case C10D_STATUS_ABI_MISMATCH:
      return "abi_mismatch";
    case C10D_STATUS_OUT_OF_MEMORY:
      return "out_of_memory";
    case C10D_STATUS_INTERNAL:
      return "internal";
    case C10D_STATUS_PENDING:
      return "pending";
    default:
      return "unknown";
  }
}

c10d_status_t fail(c10d_status_t status, const std::string& message) {
  try {
    tlsLastError = message;
  } catch (...) {
    tlsLastError.clear();  // out of memory for the message itself: keep the status
  }
  return status;
}

c10d_status_t statusOf(const std::exception_ptr& error, std::string* message) {
  if (!error) {
    message->clear();
    return C10D_STATUS_OK;
  }
  try {
    std::rethrow_exception(error);
  } catch (const AbiMismatch& e) {
    *message = e.what();
    return C10D_STATUS_ABI_MISMATCH;
  } catch (const InvalidArgument& e) {
    *message = e.what();
    return C10D_STATUS_INVALID_ARGUMENT;
  } catch (const TimeoutError& e) {
    *message = e.what();
    return C10D_STATUS_TIMEOUT;
  } catch (const CommError& e) {
    *message = e.what();
    return C10D_STATUS_COMM_ERROR;
  } catch (const Error& e) {
    *message = e.what();
    return C10D_STATUS_ERROR;
  } catch (const std::bad_alloc&) {
    *message = "out of memory (std::bad_alloc)";
    return C10D_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    *message = std::string("internal error (an unexpected exception; please report): ") + e.what();
    return C10D_STATUS_INTERNAL;
  } catch (...) {
    *message = "internal error: an exception not derived from std::exception (please report)";
    return C10D_STATUS_INTERNAL;
  }
}

ProcessGroup& groupOf(const c10d_pg_t* pg, const char* fn) {
  notNull(pg, fn, "pg");
  C10D_CHECK(pg->impl != nullptr, fn, ": the group handle holds no group");
  return *pg->impl;
}

Store& storeOf(const c10d_store_t* store, const char* fn) {
  notNull(store, fn, "store");
  C10D_CHECK(store->impl != nullptr, fn, ": the store handle holds no store");
  return *store->impl;
}

Milliseconds toTimeout(int64_t ms, Milliseconds unset, const char* fn, const char* what) {
  if (ms == C10D_TIMEOUT_DEFAULT) return unset;
  C10D_CHECK_ARG(ms >= 0, fn, ": ", what, " ", ms,
                 " ms is negative (use C10D_TIMEOUT_DEFAULT = -1 for the default)");
  return Milliseconds(ms);
}

DataType toDataType(int32_t dtype, const char* fn, const std::string& what) {
  C10D_CHECK_ARG(dtype >= 0 && dtype < kNumDataTypes, fn, ": ", what, ": dtype ", dtype,
                 " is not a c10d_dtype_t (valid: 0..", kNumDataTypes - 1, ")");
  return static_cast<DataType>(dtype);
}

DeviceType toDeviceType(int32_t type, const char* fn, const std::string& what) {
  C10D_CHECK_ARG(type == C10D_DEVICE_CPU || type == C10D_DEVICE_CUDA, fn, ": ", what,
                 ": device_type ", type, " is not a c10d_device_type_t (valid: 0 = CPU, 1 = CUDA)");
  return static_cast<DeviceType>(type);
}

ReduceOp::Kind toReduceKind(int32_t op, const char* fn) {
  C10D_CHECK_ARG(op >= 0 && op < ReduceOp::kNumKinds, fn, ": reduce op ", op,
                 " is not a c10d_reduce_op_t (valid: 0..", ReduceOp::kNumKinds - 1, ")");
  return static_cast<ReduceOp::Kind>(op);
}

namespace {

Tensor checkedTensor(const c10d_tensor_t& t, const char* fn, const std::string& what) {
  Tensor out;
  out.data = t.data;
  out.numel = static_cast<size_t>(t.numel);
  out.dtype = toDataType(rawEnum(t.dtype), fn, what);
  const DeviceType type = toDeviceType(rawEnum(t.device_type), fn, what);
  if (type == DeviceType::kCPU) {
    C10D_CHECK_ARG(t.device_index == 0, fn, ": ", what, ": device_index ", t.device_index,
                   " for a CPU tensor (must be 0)");
  } else {
    C10D_CHECK_ARG(t.device_index >= 0, fn, ": ", what, ": device_index ", t.device_index,
                   " is negative");
  }
  out.device = Device{type, t.device_index};
  C10D_CHECK_ARG(t.reserved_ == 0, fn, ": ", what, ": reserved_ is ", t.reserved_,
                 " (must be 0: zero-initialise the struct or use c10d_tensor_cpu())");
  return out;
}

}  // namespace

Tensor toTensor(const c10d_tensor_t* t, const char* fn, const char* what) {
  notNull(t, fn, what);
  return checkedTensor(*t, fn, what);
}

std::vector<Tensor> toTensors(const c10d_tensor_t* ts, size_t n, const char* fn, const char* what) {
  C10D_CHECK_ARG(ts != nullptr || n == 0, fn, ": ", what, " is NULL but its count is ", n);
  std::vector<Tensor> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(checkedTensor(ts[i], fn, detail::str(what, "[", i, "]")));
  }
  return out;
}

void checkAbi(uint32_t abiVersion, const char* fn, const char* what) {
  if (abiVersion == C10D_ABI_VERSION) return;
  throw AbiMismatch(
      detail::str(fn, ": ", what, "->abi_version is ", abiVersion,
                  ": the caller was compiled against c10d C ABI version ", abiVersion,
                  " but this library (libc10d.so.", C10D_ABI_VERSION, ", c10d ", C10D_VERSION,
                  ") implements C ABI version ", C10D_ABI_VERSION,
                  " (rebuild against this library's c10d/c_api.h, or load libc10d.so.", abiVersion,
                  "; initialise options with their c10d_*_options_init())"));
}

ProcessGroup::Options toGroupOptions(const c10d_pg_options_t* options, const char* fn) {
  notNull(options, fn, "options");
  c10d_pg_options_t defaults;
  c10d_pg_options_init(&defaults);
  const c10d_pg_options_t o =
      readStruct(options, defaults, offsetof(c10d_pg_options_t, timeout_ms), fn, "options");
  checkAbi(o.abi_version, fn, "options");
  C10D_CHECK_ARG(o.reserved_ == 0, fn, ": options->reserved_ is ", o.reserved_, " (must be 0)");
  ProcessGroup::Options out;
  out.timeout = toTimeout(o.timeout_ms, kDefaultTimeout, fn, "options->timeout_ms");
  if (o.group_name != nullptr) {
    C10D_CHECK_ARG(*o.group_name != '\0', fn, ": options->group_name is empty (NULL means \"",
                   out.groupName, "\")");
    out.groupName = o.group_name;
  }
  C10D_CHECK_ARG(o.num_config == 0 || (o.config_keys != nullptr && o.config_values != nullptr), fn,
                 ": options->num_config is ", o.num_config,
                 " but config_keys or config_values is NULL");
  for (size_t i = 0; i < o.num_config; ++i) {
    C10D_CHECK_ARG(o.config_keys[i] != nullptr && o.config_values[i] != nullptr, fn,
                   ": options->config_keys[", i, "] or config_values[", i, "] is NULL");
    const bool fresh = out.config.emplace(o.config_keys[i], o.config_values[i]).second;
    C10D_CHECK_ARG(fresh, fn, ": options->config_keys[", i, "] = '", o.config_keys[i],
                   "' is given twice");
  }
  return out;
}

Milliseconds storeTimeout(const c10d_store_options_t* options, const char* fn) {
  notNull(options, fn, "options");
  c10d_store_options_t defaults;
  c10d_store_options_init(&defaults);
  const c10d_store_options_t o =
      readStruct(options, defaults, offsetof(c10d_store_options_t, timeout_ms), fn, "options");
  checkAbi(o.abi_version, fn, "options");
  C10D_CHECK_ARG(o.reserved_ == 0, fn, ": options->reserved_ is ", o.reserved_, " (must be 0)");
  return toTimeout(o.timeout_ms, kDefaultStoreTimeout, fn, "options->timeout_ms");
}

c10d_work_t* newWorkHandle(std::shared_ptr<Work> work) {
  C10D_CHECK(work != nullptr, "the backend returned no work");
  return new c10d_work{std::move(work)};
}

}  // namespace capi
C10D_NAMESPACE_END
}  // namespace c10d

extern "C" {

const char* c10d_last_error(void) {
  return c10d::capi::tlsLastError.c_str();
}

const char* c10d_status_name(c10d_status_t status) {
  return c10d::capi::statusName(c10d::capi::rawEnum(status));
}

uint32_t c10d_abi_version(void) {
  return C10D_ABI_VERSION;
}

const char* c10d_version(void) {
  return C10D_VERSION;
}

}  // extern "C"
