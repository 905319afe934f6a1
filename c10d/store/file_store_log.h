// Internals of FileStore: the RAII file and flock wrappers and the record format of the log.
//
// The log is a sequence of records, each
//   u8 type | u32 keyLen | u64 valueLen | key bytes | value bytes      (host byte order)
// Writers hold an exclusive flock while appending, readers a shared one while reading, so a reader
// only ever sees whole records. Not a public header: only file_store.cc includes it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace detail {

enum class RecordType : uint8_t { kSet = 1, kDelete = 2, kAppend = 3 };

// An open file descriptor, closed on destruction.
class File {
 public:
  File() = default;
  // Opens (creating if needed) `path` for reading and appending; throws Error naming path and
  // errno.
  explicit File(const std::string& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Current size in bytes.
  uint64_t size() const;
  // Reads exactly [offset, offset + n) into `out`; throws Error on a short read.
  void readAt(uint64_t offset, uint64_t n, Bytes& out) const;
  // Appends `data` at the end of the file; on failure truncates back to `sizeBefore` (so the log
  // never holds a torn record) and throws Error naming path and errno.
  void append(const Bytes& data, uint64_t sizeBefore);

 private:
  int fd_ = -1;
  std::string path_;
};

// flock(2) held for its lifetime: shared (readers) or exclusive (writers). flock, not fcntl:
// fcntl locks belong to the process, so two FileStores on one path in one process would not
// exclude each other; flock locks belong to the open file, one per FileStore.
class FileLock {
 public:
  enum Mode { kShared, kExclusive };
  FileLock(const File& file, Mode mode);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Encodes one record and appends it to `out`.
void encodeRecord(RecordType type, const std::string& key, const Bytes& value, Bytes& out);

// Applies every record in `data` to `map`; throws Error (naming `path` and `offset`) on a torn or
// unknown record.
void applyRecords(const Bytes& data, std::unordered_map<std::string, Bytes>& map,
                  const std::string& path, uint64_t offset);

// Applies one record to `map`.
void applyRecord(RecordType type, const std::string& key, const Bytes& value,
                 std::unordered_map<std::string, Bytes>& map);

}  // namespace detail
C10D_NAMESPACE_END
}  // namespace c10d
