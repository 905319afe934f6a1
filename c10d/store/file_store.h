// FileStore: a Store in one file, shared by processes on one host or over NFS.
//
// The file is an append-only log of records under flock(2) locks; every process replays what
// others appended since its last read. No inotify (so it works on NFS): waiting readers re-read
// the log with a short, growing sleep. The file is removed by the last of `numUsers` users to
// destroy its FileStore (a user count kept in the file itself).
//
// Threads: none started. Every method is thread-safe (an in-process mutex plus the flock). get and
// wait poll the file (1 ms doubling to 32 ms) until the timeout. Each FileStore object holds its
// own open file; a forked child must construct its own FileStore rather than use the parent's (the
// flock belongs to the open file, which fork shares). Keys starting with a NUL byte followed by
// "c10d.filestore." are reserved for the user counters.
#pragma once

#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class FileStore : public Store {
 public:
  // numUsers < 0: never clean up the file.
  FileStore(const std::string& path, int numUsers, Milliseconds timeout = kDefaultStoreTimeout);
  ~FileStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  using Store::set;
  using Store::wait;

  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

C10D_NAMESPACE_END
}  // namespace c10d
