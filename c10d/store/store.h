// Store: the key-value rendezvous every process group is built on.
//
// Keys are strings; values are arbitrary bytes (NUL bytes included). All methods are thread-safe
// and may be called from any thread. Blocking methods (get, wait) block at most the timeout: the
// explicit argument, else the store's own timeout() (setTimeout / constructor); on expiry they
// throw TimeoutError naming the key(s) and the timeout. A store that loses its server or file
// throws CommError / Error naming what it lost.
//
// Semantics shared by every implementation (checked by tests/store/store_conformance_test.cc):
//   set(k, v)            stores v, waking waiters on k.
//   get(k)               waits for k, then returns its value.
//   add(k, d)            treats the value as a decimal integer (missing = 0), adds d, returns the
//                        new value; atomic across all clients.
//   compareSet(k, e, d)  atomically: if k is missing and e is empty, or k's value == e, sets d and
//                        returns d; otherwise returns the current value (e if k is missing).
//   check(keys)          true when every key exists; never blocks.
//   deleteKey(k)         true when k existed.
//   getNumKeys()         number of keys present.
//   wait(keys, t)        blocks until every key exists.
//   append(k, v)         appends v to k's value (creating it); atomic.
//   multiGet(keys)       get() of each key, in order.
//   multiSet(keys, vs)   set() of each pair.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using Bytes = std::vector<uint8_t>;

inline Bytes toBytes(const std::string& s) {
  return Bytes(s.begin(), s.end());
}
inline std::string toString(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

class Store {
 public:
  explicit Store(Milliseconds timeout = kDefaultStoreTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  virtual Bytes get(const std::string& key) = 0;
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual bool deleteKey(const std::string& key) = 0;
  virtual int64_t getNumKeys() = 0;
  virtual void wait(const std::vector<std::string>& keys, Milliseconds timeout) = 0;
  virtual void append(const std::string& key, const Bytes& value) = 0;
  // Defaults loop over get/set; stores with a batched protocol override them.
  virtual std::vector<Bytes> multiGet(const std::vector<std::string>& keys);
  virtual void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values);

  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

  // Conveniences over the byte API.
  void set(const std::string& key, const std::string& value) { set(key, toBytes(value)); }
  std::string getString(const std::string& key) { return toString(get(key)); }

  virtual void setTimeout(Milliseconds timeout) { timeout_ = timeout; }
  Milliseconds timeout() const { return timeout_; }

 protected:
  // The timeout to use for a call given `t` (kUnsetTimeout = the store's own).
  Milliseconds resolve(Milliseconds t) const { return t == kUnsetTimeout ? timeout_ : t; }

  Milliseconds timeout_;
};

C10D_NAMESPACE_END
}  // namespace c10d
