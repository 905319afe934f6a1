#include "tools/c10drun/output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

bool writeAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 1000);
    } else {
      return false;
    }
  }
  return true;
}

LinePrefixer::LinePrefixer(int outFd, std::string prefix, size_t maxLine)
    : outFd_(outFd), prefix_(std::move(prefix)), maxLine_(maxLine > 0 ? maxLine : 1) {}

void LinePrefixer::appendLine(std::string& out, const char* line, size_t n) const {
  out.append(prefix_);
  out.append(line, n);
  out.push_back('\n');
}

void LinePrefixer::feed(const char* data, size_t n) {
  std::string out;
  const char* end = data + n;
  while (data < end) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', end - data));
    if (nl == nullptr) {
      partial_.append(data, end - data);
      break;
    }
    if (partial_.empty()) {
      appendLine(out, data, nl - data);
    } else {
      partial_.append(data, nl - data);
      appendLine(out, partial_.data(), partial_.size());
      partial_.clear();
    }
    data = nl + 1;
  }
  while (partial_.size() >= maxLine_) {
    appendLine(out, partial_.data(), maxLine_);
    partial_.erase(0, maxLine_);
  }
  if (!out.empty()) writeAll(outFd_, out.data(), out.size());
}

void LinePrefixer::finish() {
  if (partial_.empty()) return;
  std::string out;
  appendLine(out, partial_.data(), partial_.size());
  partial_.clear();
  writeAll(outFd_, out.data(), out.size());
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
