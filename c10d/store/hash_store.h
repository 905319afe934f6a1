// HashStore: an in-process Store (a map under a mutex, waiters on a condition variable). For
// ranks run as threads in one process, and for tests.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class HashStore : public Store {
 public:
  explicit HashStore(Milliseconds timeout = kDefaultStoreTimeout) : Store(timeout) {}

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  using Store::set;
  using Store::wait;

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Bytes> map_ C10D_GUARDED_BY(mu_);
};

C10D_NAMESPACE_END
}  // namespace c10d
