// C ABI: stores. The built-in stores, the store operations, and CallbackStore: a c10d::Store whose
// operations are the host framework's callbacks (c10d_store_callbacks_t), so that every backend
// rendezvouses through the framework's own store.
#include <new>

#include "c10d/base/abi.h"
#include "c10d/c_api_internal.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/prefix_store.h"
#include "c10d/store/tcp/tcp_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace capi {

namespace {

// Sinks over C++ containers. A write that cannot allocate reports OUT_OF_MEMORY to the producer.
template <typename Container>
c10d_status_t appendTo(c10d_sink_t* sink, const void* data, size_t size) noexcept {
  if (size == 0) return C10D_STATUS_OK;
  if (sink == nullptr || sink->context == nullptr || data == nullptr) {
    return C10D_STATUS_INVALID_ARGUMENT;
  }
  try {
    auto* out = static_cast<Container*>(sink->context);
    const auto* p = static_cast<const char*>(data);
    out->insert(out->end(), p, p + size);
    return C10D_STATUS_OK;
  } catch (...) {
    return C10D_STATUS_OUT_OF_MEMORY;
  }
}

c10d_sink_t sinkInto(Bytes* out) {
  return c10d_sink_t{&appendTo<Bytes>, out};
}
c10d_sink_t sinkInto(std::string* out) {
  return c10d_sink_t{&appendTo<std::string>, out};
}

// Keys cross as C strings: a key with a NUL byte would arrive cut short.
void checkKey(const std::string& key, const char* op) {
  const size_t nul = key.find('\0');
  C10D_CHECK_ARG(nul == std::string::npos, "host store ", op, ": key has a NUL byte at offset ",
                 nul, " (host stores take C-string keys)");
}

std::string quoted(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 4 && keys.size() > 5) return s + ", ... (" + std::to_string(keys.size()) + " keys)";
    s += (i == 0 ? "'" : ", '") + keys[i] + "'";
  }
  return s;
}

class CallbackStore : public Store {
 public:
  CallbackStore(const c10d_store_callbacks_t& cb, Milliseconds timeout) : Store(timeout), cb_(cb) {}
  ~CallbackStore() override {
    if (cb_.destroy != nullptr) cb_.destroy(cb_.user);
  }

  void set(const std::string& key, const Bytes& value) override {
    checkKey(key, "set");
    call("set('" + key + "')", [&](c10d_sink_t* err) {
      return cb_.set(cb_.user, key.c_str(), value.data(), value.size(), err);
    });
  }

  Bytes get(const std::string& key) override {
    checkKey(key, "get");
    Bytes value;
    const int64_t t = timeout_.count();
    call("get('" + key + "')", [&](c10d_sink_t* err) {
      value.clear();
      c10d_sink_t sink = sinkInto(&value);
      return cb_.get(cb_.user, key.c_str(), t, &sink, err);
    });
    return value;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    checkKey(key, "add");
    int64_t result = 0;
    call("add('" + key + "')",
         [&](c10d_sink_t* err) { return cb_.add(cb_.user, key.c_str(), delta, &result, err); });
    return result;
  }

  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    checkKey(key, "compare_set");
    need(cb_.compare_set != nullptr, "compare_set");
    Bytes current;
    call("compare_set('" + key + "')", [&](c10d_sink_t* err) {
      current.clear();
      c10d_sink_t sink = sinkInto(&current);
      return cb_.compare_set(cb_.user, key.c_str(), expected.data(), expected.size(),
                             desired.data(), desired.size(), &sink, err);
    });
    return current;
  }

  bool check(const std::vector<std::string>& keys) override {
    const std::vector<const char*> ptrs = cKeys(keys, "check");
    int all = -1;
    call("check(" + quoted(keys) + ")", [&](c10d_sink_t* err) {
      return cb_.check(cb_.user, ptrs.data(), ptrs.size(), &all, err);
    });
    C10D_CHECK_ARG(all == 0 || all == 1, "host store check(", quoted(keys),
                   "): the callback returned OK with *all_exist = ", all, " (must be 0 or 1)");
    return all == 1;
  }

  bool deleteKey(const std::string& key) override {
    checkKey(key, "delete_key");
    need(cb_.delete_key != nullptr, "delete_key");
    int deleted = 0;
    call("delete_key('" + key + "')",
         [&](c10d_sink_t* err) { return cb_.delete_key(cb_.user, key.c_str(), &deleted, err); });
    return deleted != 0;
  }

  int64_t getNumKeys() override {
    need(cb_.num_keys != nullptr, "num_keys");
    int64_t count = 0;
    call("num_keys()", [&](c10d_sink_t* err) { return cb_.num_keys(cb_.user, &count, err); });
    return count;
  }

  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override {
    const std::vector<const char*> ptrs = cKeys(keys, "wait");
    const Milliseconds t = resolve(timeout);
    C10D_CHECK_ARG(t >= Milliseconds::zero(), "host store wait(", quoted(keys), "): timeout ",
                   t.count(), " ms is negative");
    call("wait(" + quoted(keys) + ")", [&](c10d_sink_t* err) {
      return cb_.wait(cb_.user, ptrs.data(), ptrs.size(), t.count(), err);
    });
  }

  void append(const std::string& key, const Bytes& value) override {
    checkKey(key, "append");
    need(cb_.append != nullptr, "append");
    call("append('" + key + "')", [&](c10d_sink_t* err) {
      return cb_.append(cb_.user, key.c_str(), value.data(), value.size(), err);
    });
  }

  using Store::set;
  using Store::wait;

 private:
  // Runs one callback; a failure becomes the C++ error of its kind, with the host's message.
  template <typename F>
  void call(const std::string& what, F&& f) {
    std::string message;
    c10d_sink_t err = sinkInto(&message);
    // The host may return any int: read it as one before treating it as a status.
    const int32_t s = rawEnum(f(&err));
    if (s == C10D_STATUS_OK) return;
    if (message.empty()) {
      message = detail::str("the callback failed with status ", s, " (", statusName(s),
                            ") and gave no message");
    }
    const std::string text = "host store " + what + ": " + message;
    switch (s) {
      case C10D_STATUS_TIMEOUT:
        throw TimeoutError(text);
      case C10D_STATUS_COMM_ERROR:
        throw CommError(text);
      case C10D_STATUS_INVALID_ARGUMENT:
        throw InvalidArgument(text);
      case C10D_STATUS_OUT_OF_MEMORY:
        throw std::bad_alloc();
      case C10D_STATUS_ERROR:
      case C10D_STATUS_ABI_MISMATCH:
      case C10D_STATUS_INTERNAL:
        throw Error(text);
      default:
        throw Error(detail::str(text, " [the callback returned ", s,
                                ", which is not a c10d_status_t failure]"));
    }
  }

  static void need(bool provided, const char* name) {
    if (!provided) {
      C10D_THROW(Error, "host store: the operation '", name,
                 "' is not provided (its callback in c10d_store_callbacks_t is NULL)");
    }
  }

  static std::vector<const char*> cKeys(const std::vector<std::string>& keys, const char* op) {
    std::vector<const char*> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      checkKey(k, op);
      out.push_back(k.c_str());
    }
    return out;
  }

  const c10d_store_callbacks_t cb_;
};

c10d_store_t* newStoreHandle(std::shared_ptr<Store> store) {
  return new c10d_store{std::move(store)};
}

std::vector<std::string> keyList(const char* const* keys, size_t n, const char* fn) {
  C10D_CHECK_ARG(keys != nullptr || n == 0, fn, ": keys is NULL but num_keys is ", n);
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    C10D_CHECK_ARG(keys[i] != nullptr, fn, ": keys[", i, "] is NULL");
    out.emplace_back(keys[i]);
  }
  return out;
}

// Hands `value` to the caller's sink.
void writeTo(c10d_sink_t* sink, const Bytes& value, const char* fn) {
  C10D_CHECK_ARG(sink->write != nullptr, fn, ": value->write is NULL");
  if (value.empty()) return;
  const int32_t s = rawEnum(sink->write(sink, value.data(), value.size()));
  if (s == C10D_STATUS_OUT_OF_MEMORY) throw std::bad_alloc();
  C10D_CHECK_ARG(s == C10D_STATUS_OK, fn, ": the caller's sink refused ", value.size(),
                 " bytes with status ", s, " (", statusName(s), ")");
}

}  // namespace

}  // namespace capi
C10D_NAMESPACE_END
}  // namespace c10d

using c10d::Milliseconds;
using c10d::capi::guard;
using c10d::capi::notNull;
using c10d::capi::storeOf;

extern "C" {

c10d_status_t c10d_store_tcp_create(const char* host, uint16_t port, int is_server, int num_workers,
                                    const c10d_store_options_t* options, c10d_store_t** out) {
  static const char* fn = "c10d_store_tcp_create";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::TCPStoreOptions o;
    o.timeout = c10d::capi::storeTimeout(options, fn);
    o.host = notNull(host, fn, "host");
    o.port = port;
    o.isServer = is_server != 0;
    C10D_CHECK_ARG(num_workers == -1 || num_workers >= 1, fn, ": num_workers ", num_workers,
                   " (must be >= 1, or -1 for unknown)");
    o.numWorkers = num_workers;
    o.waitForWorkers = o.isServer && num_workers > 0;
    *out = c10d::capi::newStoreHandle(std::make_shared<c10d::TCPStore>(o));
  });
}

c10d_status_t c10d_store_tcp_port(c10d_store_t* store, uint16_t* port) {
  static const char* fn = "c10d_store_tcp_port";
  return guard([&] {
    notNull(port, fn, "port");
    auto* tcp = dynamic_cast<c10d::TCPStore*>(&storeOf(store, fn));
    C10D_CHECK_ARG(tcp != nullptr, fn, ": the store is not a TCP store");
    *port = tcp->port();
  });
}

c10d_status_t c10d_store_file_create(const char* path, int num_users,
                                     const c10d_store_options_t* options, c10d_store_t** out) {
  static const char* fn = "c10d_store_file_create";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    const Milliseconds timeout = c10d::capi::storeTimeout(options, fn);
    notNull(path, fn, "path");
    *out = c10d::capi::newStoreHandle(std::make_shared<c10d::FileStore>(path, num_users, timeout));
  });
}

c10d_status_t c10d_store_hash_create(const c10d_store_options_t* options, c10d_store_t** out) {
  static const char* fn = "c10d_store_hash_create";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    const Milliseconds timeout = c10d::capi::storeTimeout(options, fn);
    *out = c10d::capi::newStoreHandle(std::make_shared<c10d::HashStore>(timeout));
  });
}

c10d_status_t c10d_store_prefix_create(const char* prefix, c10d_store_t* base, c10d_store_t** out) {
  static const char* fn = "c10d_store_prefix_create";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    notNull(prefix, fn, "prefix");
    storeOf(base, fn);
    *out = c10d::capi::newStoreHandle(std::make_shared<c10d::PrefixStore>(prefix, base->impl));
  });
}

c10d_status_t c10d_store_from_callbacks(const c10d_store_callbacks_t* callbacks,
                                        const c10d_store_options_t* options, c10d_store_t** out) {
  static const char* fn = "c10d_store_from_callbacks";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    const Milliseconds timeout = c10d::capi::storeTimeout(options, fn);
    notNull(callbacks, fn, "callbacks");
    c10d_store_callbacks_t none{};
    const c10d_store_callbacks_t cb = c10d::capi::readStruct(
        callbacks, none, offsetof(c10d_store_callbacks_t, delete_key), fn, "callbacks");
    const char* missing = cb.set == nullptr     ? "set"
                          : cb.get == nullptr   ? "get"
                          : cb.add == nullptr   ? "add"
                          : cb.check == nullptr ? "check"
                          : cb.wait == nullptr  ? "wait"
                                                : nullptr;
    C10D_CHECK_ARG(missing == nullptr, fn, ": callbacks->", missing,
                   " is NULL (set, get, add, check and wait are required)");
    // The handle first: once the CallbackStore exists, nothing can fail, so `destroy` is never
    // called for a creation that reports a failure (the caller then still owns `user`).
    auto handle = std::make_unique<c10d_store>();
    handle->impl = std::make_shared<c10d::capi::CallbackStore>(cb, timeout);
    *out = handle.release();
  });
}

c10d_status_t c10d_store_set(c10d_store_t* store, const char* key, const void* value, size_t size) {
  static const char* fn = "c10d_store_set";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(key, fn, "key");
    C10D_CHECK_ARG(value != nullptr || size == 0, fn, ": value is NULL but size is ", size);
    const auto* p = static_cast<const uint8_t*>(value);
    s.set(key, c10d::Bytes(p, p + size));
  });
}

c10d_status_t c10d_store_get(c10d_store_t* store, const char* key, c10d_sink_t* value) {
  static const char* fn = "c10d_store_get";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(key, fn, "key");
    notNull(value, fn, "value");
    c10d::capi::writeTo(value, s.get(key), fn);
  });
}

c10d_status_t c10d_store_add(c10d_store_t* store, const char* key, int64_t delta, int64_t* result) {
  static const char* fn = "c10d_store_add";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(key, fn, "key");
    const int64_t v = s.add(key, delta);
    if (result != nullptr) *result = v;
  });
}

c10d_status_t c10d_store_check(c10d_store_t* store, const char* const* keys, size_t num_keys,
                               int* all_exist) {
  static const char* fn = "c10d_store_check";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(all_exist, fn, "all_exist");
    *all_exist = s.check(c10d::capi::keyList(keys, num_keys, fn)) ? 1 : 0;
  });
}

c10d_status_t c10d_store_wait(c10d_store_t* store, const char* const* keys, size_t num_keys,
                              int64_t timeout_ms) {
  static const char* fn = "c10d_store_wait";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    const Milliseconds t = c10d::capi::toTimeout(timeout_ms, c10d::kUnsetTimeout, fn, "timeout_ms");
    s.wait(c10d::capi::keyList(keys, num_keys, fn), t);
  });
}

c10d_status_t c10d_store_delete_key(c10d_store_t* store, const char* key, int* deleted) {
  static const char* fn = "c10d_store_delete_key";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(key, fn, "key");
    const bool d = s.deleteKey(key);
    if (deleted != nullptr) *deleted = d ? 1 : 0;
  });
}

c10d_status_t c10d_store_num_keys(c10d_store_t* store, int64_t* count) {
  static const char* fn = "c10d_store_num_keys";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    notNull(count, fn, "count");
    *count = s.getNumKeys();
  });
}

c10d_status_t c10d_store_set_timeout(c10d_store_t* store, int64_t timeout_ms) {
  static const char* fn = "c10d_store_set_timeout";
  return guard([&] {
    c10d::Store& s = storeOf(store, fn);
    C10D_CHECK_ARG(timeout_ms >= 0, fn, ": timeout_ms ", timeout_ms, " (must be >= 0)");
    s.setTimeout(Milliseconds(timeout_ms));
  });
}

void c10d_store_release(c10d_store_t* store) {
  delete store;
}

}  // extern "C"
