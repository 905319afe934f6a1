#include "backends/gloo/store_adapter.h"

#include "store/store.h"

namespace c10d {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<c10d::Store> store, Milliseconds timeout)
    : store_(std::move(store)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  store_->set(key, Bytes(data.begin(), data.end()));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  store_->wait({key}, timeout_);
  Bytes value = store_->get(key);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  store_->wait(keys, timeout_);
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& /*timeout*/) {
  // Gloo may pass its own 30 s default here; the group's timeout is the one the user chose.
  store_->wait(keys, timeout_);
}

}  // namespace c10d
