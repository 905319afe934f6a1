// Registers etcd:// with the store registry (store/store_registry.h) when the library is loaded.
#include "store/etcd/etcd_store.h"
#include "store/store_registry.h"

namespace c10d {
namespace {

[[maybe_unused]] const bool kRegistered = [] {
  registerStoreScheme("etcd", [](const std::string& url, Milliseconds timeout) {
    EtcdStoreOptions options = parseEtcdUrl(url);
    options.timeout = timeout;
    return std::make_shared<EtcdStore>(std::move(options));
  });
  return true;
}();

}  // namespace
}  // namespace c10d
