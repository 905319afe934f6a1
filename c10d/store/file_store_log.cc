#include "c10d/store/file_store_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace detail {
namespace {

constexpr size_t kHeaderBytes = 1 + sizeof(uint32_t) + sizeof(uint64_t);

template <typename T>
void putRaw(Bytes& out, T v) {
  uint8_t buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.insert(out.end(), buf, buf + sizeof(T));
}

template <typename T>
T getRaw(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

File::File(const std::string& path) : path_(path) {
  do {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  } while (fd_ == -1 && errno == EINTR);
  if (fd_ == -1) {
    int err = errno;
    C10D_THROW(Error, "FileStore: cannot open '", path, "': ", errnoString(err));
  }
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t File::size() const {
  struct stat st;
  if (::fstat(fd_, &st) == -1) {
    int err = errno;
    C10D_THROW(Error, "FileStore: fstat of '", path_, "' failed: ", errnoString(err));
  }
  return static_cast<uint64_t>(st.st_size);
}

void File::readAt(uint64_t offset, uint64_t n, Bytes& out) const {
  out.resize(n);
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (r == -1 && errno == EINTR) continue;
    if (r == -1) {
      int err = errno;
      C10D_THROW(Error, "FileStore: read of ", n, " bytes at offset ", offset, " of '", path_,
                 "' failed: ", errnoString(err));
    }
    if (r == 0) {
      C10D_THROW(Error, "FileStore: '", path_, "' ended at ", offset + done, " bytes, expected ",
                 offset + n, " (was it truncated or removed by another process?)");
    }
    done += static_cast<uint64_t>(r);
  }
}

void File::append(const Bytes& data, uint64_t sizeBefore) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd_, data.data() + done, data.size() - done);
    if (w == -1 && errno == EINTR) continue;
    if (w == -1) {
      int err = errno;
      // Best effort: never leave a torn record behind for the other processes to choke on.
      if (::ftruncate(fd_, static_cast<off_t>(sizeBefore)) == -1) {
      }
      C10D_THROW(Error, "FileStore: append of ", data.size(), " bytes to '", path_,
                 "' failed: ", errnoString(err));
    }
    done += static_cast<size_t>(w);
  }
}

FileLock::FileLock(const File& file, Mode mode) : fd_(file.fd()) {
  const int op = mode == kShared ? LOCK_SH : LOCK_EX;
  while (::flock(fd_, op) == -1) {
    if (errno == EINTR) continue;
    int err = errno;
    C10D_THROW(Error, "FileStore: flock(", mode == kShared ? "LOCK_SH" : "LOCK_EX", ") of '",
               file.path(), "' failed: ", errnoString(err));
  }
}

FileLock::~FileLock() {
  ::flock(fd_, LOCK_UN);
}

void encodeRecord(RecordType type, const std::string& key, const Bytes& value, Bytes& out) {
  out.reserve(out.size() + kHeaderBytes + key.size() + value.size());
  out.push_back(static_cast<uint8_t>(type));
  putRaw<uint32_t>(out, static_cast<uint32_t>(key.size()));
  putRaw<uint64_t>(out, static_cast<uint64_t>(value.size()));
  out.insert(out.end(), key.begin(), key.end());
  out.insert(out.end(), value.begin(), value.end());
}

void applyRecord(RecordType type, const std::string& key, const Bytes& value,
                 std::unordered_map<std::string, Bytes>& map) {
  switch (type) {
    case RecordType::kSet:
      map[key] = value;
      break;
    case RecordType::kDelete:
      map.erase(key);
      break;
    case RecordType::kAppend: {
      Bytes& current = map[key];
      current.insert(current.end(), value.begin(), value.end());
      break;
    }
  }
}

void applyRecords(const Bytes& data, std::unordered_map<std::string, Bytes>& map,
                  const std::string& path, uint64_t offset) {
  size_t pos = 0;
  while (pos < data.size()) {
    const uint64_t at = offset + pos;
    C10D_CHECK(data.size() - pos >= kHeaderBytes, "FileStore: torn record header at offset ", at,
               " of '", path, "'");
    const uint8_t type = data[pos];
    C10D_CHECK(type >= 1 && type <= 3, "FileStore: unknown record type ", int(type), " at offset ",
               at, " of '", path, "' (not a FileStore file?)");
    const uint64_t keyLen = getRaw<uint32_t>(&data[pos + 1]);
    const uint64_t valueLen = getRaw<uint64_t>(&data[pos + 1 + sizeof(uint32_t)]);
    pos += kHeaderBytes;
    C10D_CHECK(data.size() - pos >= keyLen && data.size() - pos - keyLen >= valueLen,
               "FileStore: torn record at offset ", at, " of '", path, "' (key ", keyLen,
               " bytes, value ", valueLen, " bytes, ", data.size() - pos, " bytes left)");
    std::string key(reinterpret_cast<const char*>(&data[pos]), keyLen);
    pos += keyLen;
    Bytes value(data.begin() + static_cast<ptrdiff_t>(pos),
                data.begin() + static_cast<ptrdiff_t>(pos + valueLen));
    pos += valueLen;
    applyRecord(static_cast<RecordType>(type), key, value, map);
  }
}

}  // namespace detail
C10D_NAMESPACE_END
}  // namespace c10d
