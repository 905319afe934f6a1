#include "torch_store.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace c10d_torch {
namespace {

struct StoreHolder {
  c10::intrusive_ptr<::c10d::Store> store;
};

::c10d::Store& storeOf(void* user) {
  return *static_cast<StoreHolder*>(user)->store;
}

void writeError(c10d_sink_t* sink, const std::string& message) {
  if (sink != nullptr) {
    sink->write(sink, message.data(), message.size());
  }
}

// Runs fn, turning any exception into a status and a message (nothing may leave a callback).
template <typename Fn>
c10d_status_t guarded(c10d_sink_t* error, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const c10::Error& e) {
    std::string text = e.what_without_backtrace();
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const bool timedOut =
        lower.find("timeout") != std::string::npos || lower.find("timed out") != std::string::npos;
    writeError(error, "torch store: " + text);
    return timedOut ? C10D_STATUS_TIMEOUT : C10D_STATUS_COMM_ERROR;
  } catch (const std::bad_alloc&) {
    writeError(error, "torch store: out of memory");
    return C10D_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    writeError(error, std::string("torch store: ") + e.what());
    return C10D_STATUS_COMM_ERROR;
  } catch (...) {
    writeError(error, "torch store: unknown exception");
    return C10D_STATUS_ERROR;
  }
}

std::vector<std::string> keyList(const char* const* keys, size_t num_keys) {
  return std::vector<std::string>(keys, keys + num_keys);
}

// torch's stores read a zero timeout as "no timeout"; libc10d's 0 means "do not block".
std::chrono::milliseconds torchTimeout(int64_t timeout_ms) {
  return std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 1));
}

c10d_status_t writeBytes(c10d_sink_t* sink, const std::vector<uint8_t>& bytes) {
  return sink->write(sink, bytes.data(), bytes.size());
}

c10d_status_t storeSet(void* user, const char* key, const void* value, size_t size,
                       c10d_sink_t* error) {
  return guarded(error, [&] {
    const auto* bytes = static_cast<const uint8_t*>(value);
    storeOf(user).set(key, std::vector<uint8_t>(bytes, bytes + size));
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeGet(void* user, const char* key, int64_t timeout_ms, c10d_sink_t* value,
                       c10d_sink_t* error) {
  return guarded(error, [&] {
    // torch's get() waits with the store's own timeout; wait first to honour ours.
    storeOf(user).wait({key}, torchTimeout(timeout_ms));
    return writeBytes(value, storeOf(user).get(key));
  });
}

c10d_status_t storeAdd(void* user, const char* key, int64_t delta, int64_t* result,
                       c10d_sink_t* error) {
  return guarded(error, [&] {
    *result = storeOf(user).add(key, delta);
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeCheck(void* user, const char* const* keys, size_t num_keys, int* all_exist,
                         c10d_sink_t* error) {
  return guarded(error, [&] {
    *all_exist = storeOf(user).check(keyList(keys, num_keys)) ? 1 : 0;
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeWait(void* user, const char* const* keys, size_t num_keys, int64_t timeout_ms,
                        c10d_sink_t* error) {
  return guarded(error, [&] {
    storeOf(user).wait(keyList(keys, num_keys), torchTimeout(timeout_ms));
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeDeleteKey(void* user, const char* key, int* deleted, c10d_sink_t* error) {
  return guarded(error, [&] {
    *deleted = storeOf(user).deleteKey(key) ? 1 : 0;
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeNumKeys(void* user, int64_t* count, c10d_sink_t* error) {
  return guarded(error, [&] {
    *count = storeOf(user).getNumKeys();
    return C10D_STATUS_OK;
  });
}

c10d_status_t storeCompareSet(void* user, const char* key, const void* expected,
                              size_t expected_size, const void* desired, size_t desired_size,
                              c10d_sink_t* current, c10d_sink_t* error) {
  return guarded(error, [&] {
    const auto* e = static_cast<const uint8_t*>(expected);
    const auto* d = static_cast<const uint8_t*>(desired);
    return writeBytes(current,
                      storeOf(user).compareSet(key, std::vector<uint8_t>(e, e + expected_size),
                                               std::vector<uint8_t>(d, d + desired_size)));
  });
}

void storeDestroy(void* user) {
  delete static_cast<StoreHolder*>(user);
}

}  // namespace

c10d_store_t* wrapTorchStore(const c10::intrusive_ptr<::c10d::Store>& store,
                             std::chrono::milliseconds timeout) {
  TORCH_CHECK(store, "c10d_torch: the store passed to the c10d backend is None");
  const CApi& api = capi();
  auto holder = std::make_unique<StoreHolder>(StoreHolder{store});
  c10d_store_callbacks_t callbacks{};
  callbacks.struct_size = sizeof(callbacks);
  callbacks.user = holder.get();
  callbacks.set = storeSet;
  callbacks.get = storeGet;
  callbacks.add = storeAdd;
  callbacks.check = storeCheck;
  callbacks.wait = storeWait;
  callbacks.delete_key = storeDeleteKey;
  callbacks.num_keys = storeNumKeys;
  callbacks.compare_set = storeCompareSet;
  callbacks.append = nullptr;  // torch 1.13's Store has no append
  callbacks.destroy = storeDestroy;
  c10d_store_options_t options;
  c10d_store_options_init(&options);
  options.timeout_ms = timeout.count() > 0 ? timeout.count() : C10D_TIMEOUT_DEFAULT;
  c10d_store_t* out = nullptr;
  const c10d_status_t status = api.c10d_store_from_callbacks(&callbacks, &options, &out);
  TORCH_CHECK(status == C10D_STATUS_OK,
              "c10d_torch: cannot wrap torch's store: ", api.c10d_last_error());
  holder.release();  // owned by the c10d store now (storeDestroy)
  return out;
}

}  // namespace c10d_torch
