#include "c10d/store/file_store.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/file_store_log.h"
#include "c10d/store/store_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using Clock = std::chrono::steady_clock;
using detail::FileLock;
using detail::RecordType;

// The user counters live in the log itself, under keys no caller can produce by accident (they
// start with a NUL byte). getNumKeys() does not count them.
const std::string kActiveUsersKey("\0c10d.filestore.active_users", 28);
const std::string kJoinedUsersKey("\0c10d.filestore.joined_users", 28);

// Polling schedule of get/wait: 1 ms, doubling up to 32 ms.
constexpr Milliseconds kFirstPoll{1};
constexpr Milliseconds kMaxPoll{32};

using storeutil::deadlineAfter;
using storeutil::describeKeys;

bool isInternalKey(const std::string& key) {
  return key == kActiveUsersKey || key == kJoinedUsersKey;
}

}  // namespace

struct FileStore::Impl {
  Impl(const std::string& p, int n) : path(p), numUsers(n), file(p) {}

  const std::string path;
  const int numUsers;
  Mutex mu;  // serializes this process's threads; the flock serializes processes
  detail::File file;
  std::unordered_map<std::string, Bytes> map C10D_GUARDED_BY(mu);
  uint64_t offset C10D_GUARDED_BY(mu) = 0;  // bytes of the log already applied

  // Applies what other processes appended since the last call. Caller holds mu and a flock.
  void replay() C10D_REQUIRES(mu) {
    const uint64_t size = file.size();
    if (size < offset) {
      C10D_THROW(Error, "FileStore: '", path, "' shrank from ", offset, " to ", size,
                 " bytes (removed or truncated by another process?)");
    }
    if (size == offset) return;
    Bytes data;
    file.readAt(offset, size - offset, data);
    detail::applyRecords(data, map, path, offset);
    offset = size;
  }

  // Appends one record and applies it locally. Caller holds mu and an exclusive flock and has
  // replayed, so the local map is exactly the log up to the end.
  void write(RecordType type, const std::string& key, const Bytes& value) C10D_REQUIRES(mu) {
    Bytes record;
    detail::encodeRecord(type, key, value, record);
    file.append(record, offset);
    offset += record.size();
    detail::applyRecord(type, key, value, map);
  }

  int64_t counter(const std::string& key) const C10D_REQUIRES(mu) {
    auto it = map.find(key);
    if (it == map.end()) return 0;
    const Bytes& v = it->second;
    int64_t n = 0;
    const char* begin = reinterpret_cast<const char*>(v.data());
    const char* end = begin + v.size();
    auto res = std::from_chars(begin, end, n);
    C10D_CHECK_ARG(!v.empty() && res.ec == std::errc() && res.ptr == end, "FileStore::add: key '",
                   key, "' in '", path, "' holds a value that is not a decimal int64 (", v.size(),
                   " bytes)");
    return n;
  }

  int64_t addLocked(const std::string& key, int64_t delta) C10D_REQUIRES(mu) {
    const int64_t result =
        static_cast<int64_t>(static_cast<uint64_t>(counter(key)) + static_cast<uint64_t>(delta));
    write(RecordType::kSet, key, toBytes(std::to_string(result)));
    return result;
  }

  // Polls until every key exists or the deadline; returns the keys still missing. With `value`,
  // copies the (first) key's value out under the same lock that saw it.
  std::vector<std::string> waitFor(const std::vector<std::string>& keys, Milliseconds timeout,
                                   Bytes* value = nullptr) C10D_EXCLUDES(mu) {
    const auto deadline = deadlineAfter(timeout);
    Milliseconds sleep = kFirstPoll;
    while (true) {
      std::vector<std::string> missing;
      {
        MutexLock guard(mu);
        FileLock lock(file, FileLock::kShared);
        replay();
        for (const auto& key : keys) {
          if (map.find(key) == map.end()) missing.push_back(key);
        }
        if (missing.empty() && value != nullptr && !keys.empty()) *value = map.at(keys.front());
      }
      const auto now = Clock::now();
      if (missing.empty() || now >= deadline) return missing;
      std::this_thread::sleep_for(std::min<Clock::duration>(sleep, deadline - now));
      sleep = std::min(sleep * 2, kMaxPoll);
    }
  }
};

FileStore::FileStore(const std::string& path, int numUsers, Milliseconds timeout) : Store(timeout) {
  C10D_CHECK_ARG(numUsers != 0, "FileStore('", path, "'): numUsers must be > 0, or < 0 for never ",
                 "removing the file; got 0");
  impl_ = std::make_unique<Impl>(path, numUsers);
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  impl_->addLocked(kJoinedUsersKey, 1);
  impl_->addLocked(kActiveUsersKey, 1);
}

FileStore::~FileStore() {
  try {
    MutexLock guard(impl_->mu);
    FileLock lock(impl_->file, FileLock::kExclusive);
    impl_->replay();
    const int64_t active = impl_->addLocked(kActiveUsersKey, -1);
    const int64_t joined = impl_->counter(kJoinedUsersKey);
    // Unlink while still holding the lock: a process that opens the path from now on gets a fresh
    // file; those still holding the old one are all gone (active == 0).
    if (impl_->numUsers > 0 && active <= 0 && joined >= impl_->numUsers) {
      if (::unlink(impl_->path.c_str()) == -1 && errno != ENOENT) {
        std::fprintf(stderr, "c10d: FileStore: cannot remove '%s': %s\n", impl_->path.c_str(),
                     detail::errnoString(errno).c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d: FileStore: cleanup of '%s' failed: %s\n", impl_->path.c_str(),
                 e.what());
  }
}

const std::string& FileStore::path() const {
  return impl_->path;
}

void FileStore::set(const std::string& key, const Bytes& value) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  impl_->write(RecordType::kSet, key, value);
}

Bytes FileStore::get(const std::string& key) {
  const Milliseconds timeout = resolve(kUnsetTimeout);
  Bytes value;
  if (!impl_->waitFor({key}, timeout, &value).empty()) {
    C10D_THROW(TimeoutError, "FileStore::get: key '", key, "' was not set in '", impl_->path,
               "' within the timeout of ", timeout.count(), " ms");
  }
  return value;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  return impl_->addLocked(key, delta);
}

Bytes FileStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  auto it = impl_->map.find(key);
  if (it == impl_->map.end() && !expected.empty()) return expected;
  if (it != impl_->map.end() && it->second != expected) return it->second;
  impl_->write(RecordType::kSet, key, desired);
  return desired;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kShared);
  impl_->replay();
  for (const auto& key : keys) {
    if (impl_->map.find(key) == impl_->map.end()) return false;
  }
  return true;
}

bool FileStore::deleteKey(const std::string& key) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  if (impl_->map.find(key) == impl_->map.end()) return false;
  impl_->write(RecordType::kDelete, key, Bytes());
  return true;
}

int64_t FileStore::getNumKeys() {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kShared);
  impl_->replay();
  int64_t n = 0;
  for (const auto& kv : impl_->map) {
    if (!isInternalKey(kv.first)) ++n;
  }
  return n;
}

void FileStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  timeout = resolve(timeout);
  C10D_CHECK_ARG(timeout.count() >= 0, "FileStore::wait: negative timeout ", timeout.count(),
                 " ms for keys ", describeKeys(keys));
  auto missing = impl_->waitFor(keys, timeout);
  if (!missing.empty()) {
    C10D_THROW(TimeoutError, "FileStore::wait: keys ", describeKeys(missing), " were not set in '",
               impl_->path, "' within the timeout of ", timeout.count(), " ms");
  }
}

void FileStore::append(const std::string& key, const Bytes& value) {
  MutexLock guard(impl_->mu);
  FileLock lock(impl_->file, FileLock::kExclusive);
  impl_->replay();
  impl_->write(RecordType::kAppend, key, value);
}

C10D_NAMESPACE_END
}  // namespace c10d
