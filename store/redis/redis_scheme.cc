// Registers redis:// with the store registry (store/store_registry.h) when the library is loaded.
#include "store/redis/redis_store.h"
#include "store/store_registry.h"

namespace c10d {
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
}  // namespace c10d
