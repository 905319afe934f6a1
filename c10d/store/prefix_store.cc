#include "c10d/store/prefix_store.h"

#include <utility>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultStoreTimeout),
      prefix_(std::move(prefix)),
      store_(std::move(store)) {
  C10D_CHECK_ARG(store_ != nullptr, "PrefixStore('", prefix_, "'): the underlying store is null");
}

std::vector<std::string> PrefixStore::join(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(join(key));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) {
  store_->set(join(key), value);
}

Bytes PrefixStore::get(const std::string& key) {
  return store_->get(join(key));
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return store_->add(join(key), delta);
}

Bytes PrefixStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return store_->compareSet(join(key), expected, desired);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  return store_->check(join(keys));
}

bool PrefixStore::deleteKey(const std::string& key) {
  return store_->deleteKey(join(key));
}

int64_t PrefixStore::getNumKeys() {
  return store_->getNumKeys();
}

void PrefixStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  store_->wait(join(keys), resolve(timeout));
}

void PrefixStore::append(const std::string& key, const Bytes& value) {
  store_->append(join(key), value);
}

std::vector<Bytes> PrefixStore::multiGet(const std::vector<std::string>& keys) {
  return store_->multiGet(join(keys));
}

void PrefixStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  store_->multiSet(join(keys), values);
}

void PrefixStore::setTimeout(Milliseconds timeout) {
  Store::setTimeout(timeout);
  store_->setTimeout(timeout);
}

C10D_NAMESPACE_END
}  // namespace c10d
