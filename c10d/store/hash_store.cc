#include "c10d/store/hash_store.h"

#include "c10d/store/store_util.h"

#include <charconv>
#include <chrono>
#include <sstream>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using Clock = std::chrono::steady_clock;
using storeutil::deadlineAfter;
using storeutil::describeKeys;

int64_t parseCounter(const std::string& key, const Bytes& value) {
  int64_t n = 0;
  const char* begin = reinterpret_cast<const char*>(value.data());
  const char* end = begin + value.size();
  auto res = std::from_chars(begin, end, n);
  C10D_CHECK_ARG(!value.empty() && res.ec == std::errc() && res.ptr == end, "HashStore::add: key '",
                 key, "' holds a value that is not a decimal int64 (", value.size(), " bytes)");
  return n;
}

}  // namespace

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    MutexLock lock(mu_);
    map_[key] = value;
  }
  cv_.notify_all();
}

Bytes HashStore::get(const std::string& key) {
  const Milliseconds timeout = resolve(kUnsetTimeout);
  MutexLock lock(mu_);
  auto found = [&]() C10D_REQUIRES(mu_) { return map_.find(key) != map_.end(); };
  if (!lock.waitUntil(cv_, deadlineAfter(timeout), found)) {
    C10D_THROW(TimeoutError, "HashStore::get: key '", key, "' was not set within the timeout of ",
               timeout.count(), " ms");
  }
  return map_.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  {
    MutexLock lock(mu_);
    auto it = map_.find(key);
    int64_t current = it == map_.end() ? 0 : parseCounter(key, it->second);
    result = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
    map_[key] = toBytes(std::to_string(result));
  }
  cv_.notify_all();
  return result;
}

Bytes HashStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  MutexLock lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end() && !expected.empty()) return expected;
  if (it != map_.end() && it->second != expected) return it->second;
  map_[key] = desired;
  lock.unlock();
  cv_.notify_all();
  return desired;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  for (const auto& key : keys) {
    if (map_.find(key) == map_.end()) return false;
  }
  return true;
}

bool HashStore::deleteKey(const std::string& key) {
  MutexLock lock(mu_);
  return map_.erase(key) > 0;
}

int64_t HashStore::getNumKeys() {
  MutexLock lock(mu_);
  return static_cast<int64_t>(map_.size());
}

void HashStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  timeout = resolve(timeout);
  C10D_CHECK_ARG(timeout.count() >= 0, "HashStore::wait: negative timeout ", timeout.count(),
                 " ms for keys ", describeKeys(keys));
  MutexLock lock(mu_);
  auto missing = [&]() C10D_REQUIRES(mu_) {
    std::vector<std::string> out;
    for (const auto& key : keys) {
      if (map_.find(key) == map_.end()) out.push_back(key);
    }
    return out;
  };
  if (!lock.waitUntil(cv_, deadlineAfter(timeout),
                      [&]() C10D_REQUIRES(mu_) { return missing().empty(); })) {
    C10D_THROW(TimeoutError, "HashStore::wait: keys ", describeKeys(missing()),
               " were not set within the timeout of ", timeout.count(), " ms");
  }
}

void HashStore::append(const std::string& key, const Bytes& value) {
  {
    MutexLock lock(mu_);
    Bytes& current = map_[key];
    current.insert(current.end(), value.begin(), value.end());
  }
  cv_.notify_all();
}

C10D_NAMESPACE_END
}  // namespace c10d
