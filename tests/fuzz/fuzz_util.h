// Shared by the fuzz targets and the corpus generator: checks that abort with a message (so that
// libFuzzer records the input), and the TCPStore fuzz server's fixed settings.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "store/tcp/tcp_store_auth.h"
#include "store/tcp/tcp_store_config.h"

// Aborts the process (a "crash" for libFuzzer) unless `cond`.
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace c10d {
namespace fuzz {

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
}  // namespace c10d
