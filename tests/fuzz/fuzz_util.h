// Shared by the fuzz targets and the corpus generator: checks that abort with a message (so that
// libFuzzer records the input), a scratch file for the readers that take a path, the repair of a
// checksummed file, and the TCPStore fuzz server's fixed settings.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_config.h"

// Aborts the process (a "crash" for libFuzzer) unless `cond`.
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace fuzz {

// Writes `data` to $TMPDIR (or /tmp)/c10d-fuzz-<tag>-<pid> and returns the path (one per process,
// so parallel fuzzing jobs do not collide); the caller removes it.
inline std::string writeScratchFile(const char* tag, const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr && *dir ? dir : "/tmp") + "/c10d-fuzz-" +
                           tag + "-" + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0, "cannot create the scratch file");
  const bool written = size == 0 || ::write(fd, data, size) == static_cast<ssize_t>(size);
  ::close(fd);
  FUZZ_CHECK(written, "short write to the scratch file");
  return path;
}

// The c10d checkpoint files (optimizer state, train_mlp's model file) share a frame: an 8-byte
// magic, u32 version, u64 fileBytes at offset 12, ..., and an FNV-1a 64 checksum of everything
// before it in the last 8 bytes (little-endian), from the offset basis `basis`. repairFrame sets
// both to what the reader expects, so that mutations reach the fields behind the checksum.
inline void repairFrame(std::string& file, uint64_t basis) {
  if (file.size() < 28) return;
  const uint64_t n = file.size();
  for (int i = 0; i < 8; ++i) file[12 + i] = static_cast<char>(n >> (8 * i));
  const uint64_t h = fnv1a(file.data(), file.size() - 8, basis);
  for (int i = 0; i < 8; ++i) file[file.size() - 8 + i] = static_cast<char>(h >> (8 * i));
}

// The harness of a checkpoint-file reader. Input byte 0 bit 0 repairs the frame (repairFrame with
// `basis`); the rest is the file, written to a scratch file that `read(path)` reads and checks,
// then removed. `read` must return or throw a c10d::Error naming the file: any other exception
// aborts, as does an error that does not say which file.
template <typename Read>
int fuzzCheckpointFile(const uint8_t* data, size_t size, const char* tag, uint64_t basis,
                       Read&& read) {
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) repairFrame(file, basis);
  const std::string path =
      writeScratchFile(tag, reinterpret_cast<const uint8_t*>(file.data()), file.size());
  try {
    read(path);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).find(path) != std::string::npos,
               "a read error does not name the file");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    FUZZ_CHECK(false, "an exception outside c10d's Error hierarchy");
  }
  ::unlink(path.c_str());
  return 0;
}

// The TCPStore fuzz server's secret and nonce (deterministic, so seeds can carry valid proofs).
constexpr const char* kFuzzSecret = "fuzz-secret";
constexpr uint8_t kServerNonceByte = 0x5A;

inline tcpstore::Nonce fuzzServerNonce() {
  tcpstore::Nonce n;
  n.fill(kServerNonceByte);
  return n;
}

// The server settings selected by byte 0 of a TCPStore fuzz input (see
// tcp_store_server_fuzzer.cc).
inline tcpstore::ServerConfig tcpStoreFuzzConfig(uint8_t flags) {
  tcpstore::ServerConfig c;
  c.secret = (flags & 1) ? kFuzzSecret : "";
  const bool tight = (flags & 2) != 0;
  c.maxConnections = tight ? 3 : 1 << 16;
  c.maxKeys = tight ? 8 : 1 << 20;
  c.maxValueBytes = tight ? 64 : 64 << 20;
  c.maxClientBytes = tight ? 256 : int64_t{1} << 32;
  c.maxTotalBytes = tight ? 512 : int64_t{1} << 34;
  c.handshakeTimeout = std::chrono::milliseconds(1000);
  return c;
}

}  // namespace fuzz
C10D_NAMESPACE_END
}  // namespace c10d
