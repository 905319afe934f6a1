// Registers etcd:// with the store registry (c10d/store/store_registry.h) when the library is
// loaded.
#include "c10d/base/abi.h"
#include "c10d/store/etcd/etcd_store.h"
#include "c10d/store/store_registry.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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
C10D_NAMESPACE_END
}  // namespace c10d
