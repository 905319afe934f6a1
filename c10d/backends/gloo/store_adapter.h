// GlooStoreAdapter: lets Gloo's rendezvous (gloo::rendezvous::Store: set/get/wait) run over a
// c10d::Store. Keys pass through unchanged (the caller scopes the store with a PrefixStore);
// values are framed with their length and a checksum, and a get whose value is not such a frame
// throws c10d::CommError naming the key (Gloo would read past a short value). Every get/wait blocks
// at most `timeout` and then throws c10d::TimeoutError naming the key(s). Thread-safety is the
// underlying store's (all c10d stores are thread-safe).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class GlooStoreAdapter : public ::gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<c10d::Store> store, Milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The payload of a value set() wrote under `key`; CommError naming the key if `value` is not
  // such a frame. For a caller that reads the store directly.
  static std::vector<char> unframe(const std::string& key, const Bytes& value);

  // The key the last get or wait timed out on (the first of its keys still missing then), or
  // empty: lets the caller name the rank whose value never came.
  std::string timedOutKey() const;

 private:
  void waitFor(const std::vector<std::string>& keys);

  std::shared_ptr<c10d::Store> store_;
  Milliseconds timeout_;
  mutable std::mutex mu_;
  std::string timedOutKey_;  // guarded by mu_
};

C10D_NAMESPACE_END
}  // namespace c10d
