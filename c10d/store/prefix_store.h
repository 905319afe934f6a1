// PrefixStore: a view of another Store with every key prefixed by "<prefix>/", so process groups
// and sub-groups sharing one store never collide. Owns a reference to the underlying store.
#pragma once

#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  // The underlying store's count (keys of other prefixes included), as in torch.
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void setTimeout(Milliseconds timeout) override;
  using Store::set;
  using Store::wait;

  const std::shared_ptr<Store>& underlying() const { return store_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string join(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> join(const std::vector<std::string>& keys) const;

  const std::string prefix_;
  const std::shared_ptr<Store> store_;
};

C10D_NAMESPACE_END
}  // namespace c10d
