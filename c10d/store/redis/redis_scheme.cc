// Registers redis:// with the store registry (c10d/store/store_registry.h) when the library is
// loaded.
#include "c10d/base/abi.h"
#include "c10d/store/redis/redis_store.h"
#include "c10d/store/store_registry.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

[[maybe_unused]] const bool kRegistered = [] {
  registerStoreScheme("redis", [](const std::string& url, Milliseconds timeout) {
    RedisStoreOptions options = parseRedisUrl(url);
    options.timeout = timeout;
    return std::make_shared<RedisStore>(std::move(options));
  });
  return true;
}();

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
