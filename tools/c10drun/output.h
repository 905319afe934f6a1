// Line prefixing of worker output for the c10drun launcher.
//
// One LinePrefixer per worker stream (stdout or stderr). The launcher feeds it whatever it read
// from the worker's pipe; it writes every complete line to the launcher's own fd as
// "<prefix><line>\n" in a single write loop. The launcher is one thread and writes whole lines
// only, so lines of different ranks never mix mid-line. A line still incomplete when the stream
// ends is completed with a newline by finish(). A line longer than `maxLine` bytes is cut and
// written in pieces (each prefixed) so a worker that never writes '\n' cannot grow the buffer
// without bound.
//
// Writes block if the destination blocks (a full pipe: the job runs at the reader's pace); write
// errors (EPIPE: nobody reads the launcher's output) drop the output silently.
#pragma once

#include <cstddef>
#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

class LinePrefixer {
 public:
  static constexpr size_t kDefaultMaxLine = 64 * 1024;

  LinePrefixer(int outFd, std::string prefix, size_t maxLine = kDefaultMaxLine);

  // Consumes `n` bytes of the stream; writes the complete lines among them.
  void feed(const char* data, size_t n);
  // Writes the incomplete last line, if any, followed by '\n'.
  void finish();

 private:
  void appendLine(std::string& out, const char* line, size_t n) const;

  int outFd_;
  std::string prefix_;
  size_t maxLine_;
  std::string partial_;  // bytes after the last '\n' seen
};

// Writes all of `data` to `fd`, retrying on EINTR, short writes and EAGAIN (a non-blocking fd
// inherited from the caller). Returns false on any other error.
bool writeAll(int fd, const char* data, size_t n);

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
