// Fd: an owned file descriptor, closed on destruction; move-only. Shared by the stores, the
// backends' transports and the launcher (header-only, so c10drun needs no libc10d).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the current descriptor (errors from close are ignored: nothing useful can be done
  // with them here) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Reads exactly n bytes at `offset` of fd into dst (pread, retried on EINTR and short reads): 0
// when done, the errno of a failed read, or -1 when the file ends first. Does not move the file
// offset, so several threads may read one descriptor.
inline int preadFully(int fd, void* dst, size_t n, size_t offset) {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    done += static_cast<size_t>(got);
  }
  return 0;
}

C10D_NAMESPACE_END
}  // namespace c10d
