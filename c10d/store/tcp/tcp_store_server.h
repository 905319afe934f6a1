// TCPStoreServer: the TCPStore server, usable standalone (tests, store_perf) or embedded in the
// rank-0 TCPStore.
//
// The constructor binds and listens (throwing Error naming host, port and errno on failure), then
// starts ONE thread, "c10d-tcpstore", that runs an epoll event loop over non-blocking sockets and
// serves every client: thousands of connections, requests answered in order per connection. A
// `get`/`wait`/`multiGet` of a missing key parks the request on the server; the reply is pushed
// when the key is set (no polling). A malformed request closes that client only, with one line on
// stderr naming the peer. Request timeouts are the clients' business: the server only closes a
// connection that has not finished its handshake within the handshake timeout.
//
// Security (docs/stores.md "Store security"): with a shared secret, every connection must pass an
// HMAC-SHA256 challenge-response before any request is served, and the server proves the secret
// back (tcp_store_protocol.h, tcp_store_auth.h). A client without the secret, with another one,
// or that sends nothing is refused and logged ("refused connection from <addr>: ..."; such lines
// are rate-limited); the secret itself is never logged. Limits (TCPStoreLimits) bound what clients
// can make the server hold; a request past one fails with InvalidArgument naming the limit, the
// key and the size, for that client only.
//
// The destructor wakes the loop (eventfd), joins the thread and closes every connection; clients
// then see their connection lost. The constructor raises the soft RLIMIT_NOFILE to the hard limit.
// Public methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// What the server lets its clients make it hold. Each unset field is taken from its environment
// variable, else its default (docs/stores.md "Store security" has the table):
//   maxConnections  C10D_STORE_MAX_CONNECTIONS   65536   open connections, handshaking included
//   maxKeys         C10D_STORE_MAX_KEYS          1048576 keys stored
//   maxValueBytes   C10D_STORE_MAX_VALUE_BYTES   64 MiB  bytes of one value (the protocol allows
//                                                        at most tcpstore::kMaxValueBytes)
//   maxClientBytes  C10D_STORE_MAX_CLIENT_BYTES  4 GiB   key + value bytes stored by one client
//                                                        connection (a key is charged to the
//                                                        connection that last wrote it)
//   maxTotalBytes   C10D_STORE_MAX_TOTAL_BYTES   16 GiB  key + value bytes stored in all
// Byte counts in the environment take an optional K, M or G suffix (powers of 1024).
struct TCPStoreLimits {
  std::optional<int64_t> maxConnections;
  std::optional<int64_t> maxKeys;
  std::optional<int64_t> maxValueBytes;
  std::optional<int64_t> maxClientBytes;
  std::optional<int64_t> maxTotalBytes;
};

struct TCPStoreServerOptions {
  // "" = every interface (IPv6 dual-stack where available); port 0 = a free port.
  std::string bindAddress;
  uint16_t port = 0;
  // The shared secret clients must prove they know. Unset: C10D_STORE_SECRET (unset or empty
  // there: none). "" = none.
  std::optional<std::string> secret;
  TCPStoreLimits limits;
  // How long a new connection has to complete its handshake. Unset:
  // C10D_STORE_HANDSHAKE_TIMEOUT_MS, else 30 s.
  std::optional<Milliseconds> handshakeTimeout;
};

class TCPStoreServer {
 public:
  explicit TCPStoreServer(const TCPStoreServerOptions& options);
  // The other settings from the environment (secret, limits) or their defaults.
  explicit TCPStoreServer(const std::string& bindAddress = "", uint16_t port = 0);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  // The port the server listens on.
  uint16_t port() const;
  // The address the listening socket is bound to, numeric ("127.0.0.1:29500", "[::]:29500").
  std::string boundAddress() const;
  // Whether clients must authenticate (the server has a secret).
  bool authRequired() const;

  // Blocks until `n` TCPStore clients have connected (counted by their first hello once their
  // handshake succeeded; reconnects do not count), or throws TimeoutError after `timeout`.
  void waitForWorkers(int n, Milliseconds timeout);
  // Clients counted as above so far.
  int64_t numWorkers() const;
  // Connections currently open (any peer, handshaking included).
  int64_t numConnections() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

C10D_NAMESPACE_END
}  // namespace c10d
