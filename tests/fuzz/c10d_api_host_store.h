// The C ABI fuzz target's side of the callbacks (c10d_api_fuzzer.cc): sinks that take or refuse
// the bytes the library hands over, and a host store (c10d_store_callbacks_t) over a map whose
// callbacks fail or lie on a schedule chosen by the input. Callbacks run on any thread (a backend's
// included), so the store's state is under a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/c_api.h"
#include "tests/fuzz/fuzz_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace fuzz {

// A value of a C enum type. Only values in the enum's range [0, 2^31) (its *_MAX_ENUM_ is
// 0x7fffffff): another would be undefined behaviour in this C++ caller.
template <typename E>
E asEnum(int32_t v) {
  return static_cast<E>(v);
}

// ---- sinks -----------------------------------------------------------------------------------

struct SinkState {
  std::string bytes;
  int mode = 0;  // 0 takes, 1 out of memory, 2 invalid argument, 3 not a status
};

inline c10d_status_t sinkWrite(c10d_sink_t* sink, const void* data, size_t size) {
  auto* s = static_cast<SinkState*>(sink->context);
  FUZZ_CHECK(data != nullptr || size == 0, "the library wrote NULL to a sink");
  switch (s->mode) {
    case 1:
      return C10D_STATUS_OUT_OF_MEMORY;
    case 2:
      return C10D_STATUS_INVALID_ARGUMENT;
    case 3:
      return asEnum<c10d_status_t>(77);
    default:
      s->bytes.append(static_cast<const char*>(data), size);
      return C10D_STATUS_OK;
  }
}

// ---- a host store --------------------------------------------------------------------------

// A map behind the callbacks, with a fault chosen at creation: every `period`-th callback fails
// (with `status`, with or without a message) or lies (reports success without its result).
struct HostStore {
  std::mutex mu;
  std::map<std::string, std::string> kv;
  uint32_t calls = 0;
  uint32_t period = 0;  // 0: never misbehaves
  int32_t status = C10D_STATUS_ERROR;
  bool message = true;
  bool lie = false;
  std::atomic<int> destroyed{0};

  // Whether this call misbehaves (and how, in *fail: its status, else it lies).
  bool fault(c10d_sink_t* error, int32_t* fail) {
    std::lock_guard<std::mutex> lock(mu);
    if (period == 0 || ++calls % period != 0) return false;
    if (lie) return true;
    *fail = status;
    if (message) {
      const char text[] = "injected by the fuzz harness";
      error->write(error, text, sizeof(text) - 1);
    }
    return true;
  }
};

inline HostStore& host(void* user) {
  return *static_cast<HostStore*>(user);
}

#define C10D_FUZZ_HOST_FAULT(user, error)               \
  int32_t fail_ = C10D_STATUS_OK;                       \
  const bool faulty_ = host(user).fault(error, &fail_); \
  if (faulty_ && fail_ != C10D_STATUS_OK) return asEnum<c10d_status_t>(fail_)

inline c10d_status_t hostSet(void* user, const char* key, const void* value, size_t size,
                             c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && (value != nullptr || size == 0), "host set: NULL argument");
  if (faulty_) return C10D_STATUS_OK;
  std::lock_guard<std::mutex> lock(host(user).mu);
  host(user).kv[key].assign(static_cast<const char*>(value), size);
  return C10D_STATUS_OK;
}

inline c10d_status_t hostGet(void* user, const char* key, int64_t timeout_ms, c10d_sink_t* value,
                             c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && value != nullptr, "host get: NULL argument");
  FUZZ_CHECK(timeout_ms >= 0, "host get: a negative timeout");
  if (faulty_) return C10D_STATUS_OK;  // without the value
  std::string v;
  {
    std::lock_guard<std::mutex> lock(host(user).mu);
    auto it = host(user).kv.find(key);
    if (it == host(user).kv.end()) return C10D_STATUS_TIMEOUT;  // never waits: no other writer
    v = it->second;
  }
  return value->write(value, v.data(), v.size());
}

inline c10d_status_t hostAdd(void* user, const char* key, int64_t delta, int64_t* result,
                             c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && result != nullptr, "host add: NULL argument");
  if (faulty_) return C10D_STATUS_OK;  // *result left as it was
  std::lock_guard<std::mutex> lock(host(user).mu);
  std::string& v = host(user).kv[key];
  const int64_t sum = static_cast<int64_t>(
      static_cast<uint64_t>(std::strtoll(v.c_str(), nullptr, 10)) + static_cast<uint64_t>(delta));
  v = std::to_string(sum);
  *result = sum;
  return C10D_STATUS_OK;
}

inline c10d_status_t hostCheck(void* user, const char* const* keys, size_t num_keys, int* all_exist,
                               c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK((keys != nullptr || num_keys == 0) && all_exist != nullptr, "host check: NULL");
  if (faulty_) {
    *all_exist = 7;  // neither 0 nor 1
    return C10D_STATUS_OK;
  }
  std::lock_guard<std::mutex> lock(host(user).mu);
  *all_exist = 1;
  for (size_t i = 0; i < num_keys; ++i) {
    if (host(user).kv.count(keys[i]) == 0) *all_exist = 0;
  }
  return C10D_STATUS_OK;
}

inline c10d_status_t hostWait(void* user, const char* const* keys, size_t num_keys,
                              int64_t timeout_ms, c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(keys != nullptr || num_keys == 0, "host wait: NULL keys");
  FUZZ_CHECK(timeout_ms >= 0, "host wait: a negative timeout");
  if (faulty_) return C10D_STATUS_OK;  // claims the keys came
  std::lock_guard<std::mutex> lock(host(user).mu);
  for (size_t i = 0; i < num_keys; ++i) {
    if (host(user).kv.count(keys[i]) == 0) return C10D_STATUS_TIMEOUT;
  }
  return C10D_STATUS_OK;
}

inline c10d_status_t hostDelete(void* user, const char* key, int* deleted, c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && deleted != nullptr, "host delete: NULL argument");
  std::lock_guard<std::mutex> lock(host(user).mu);
  *deleted = host(user).kv.erase(key) > 0 ? 1 : 0;
  return C10D_STATUS_OK;
}

inline c10d_status_t hostNumKeys(void* user, int64_t* count, c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(count != nullptr, "host num_keys: NULL argument");
  std::lock_guard<std::mutex> lock(host(user).mu);
  *count = static_cast<int64_t>(host(user).kv.size());
  return C10D_STATUS_OK;
}

inline c10d_status_t hostCompareSet(void* user, const char* key, const void* expected,
                                    size_t expected_size, const void* desired, size_t desired_size,
                                    c10d_sink_t* current, c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && current != nullptr, "host compare_set: NULL argument");
  std::string now;
  {
    std::lock_guard<std::mutex> lock(host(user).mu);
    const std::string exp(static_cast<const char*>(expected), expected_size);
    auto it = host(user).kv.find(key);
    if ((it == host(user).kv.end() && expected_size == 0) ||
        (it != host(user).kv.end() && it->second == exp)) {
      now.assign(static_cast<const char*>(desired), desired_size);
      host(user).kv[key] = now;
    } else {
      now = it == host(user).kv.end() ? exp : it->second;
    }
  }
  return current->write(current, now.data(), now.size());
}

inline c10d_status_t hostAppend(void* user, const char* key, const void* value, size_t size,
                                c10d_sink_t* error) {
  C10D_FUZZ_HOST_FAULT(user, error);
  FUZZ_CHECK(key != nullptr && (value != nullptr || size == 0), "host append: NULL argument");
  std::lock_guard<std::mutex> lock(host(user).mu);
  host(user).kv[key].append(static_cast<const char*>(value), size);
  return C10D_STATUS_OK;
}

inline void hostDestroy(void* user) {
  FUZZ_CHECK(host(user).destroyed.fetch_add(1) == 0, "a host store destroyed twice");
}

#undef C10D_FUZZ_HOST_FAULT

}  // namespace fuzz
C10D_NAMESPACE_END
}  // namespace c10d
