// TCPStore: a Store served over TCP by one event-loop thread.
//
// The server runs on a thread inside the process that constructs the TCPStore with
// isServer = true (rank 0, as in torch), or standalone through TCPStoreServer. One epoll loop
// serves every client; `wait` and `get` on a missing key are answered by the server when the key
// is set (pushed, never polled). Clients connect with retry and exponential backoff (10 ms
// doubling to 1 s; ECONNREFUSED while the server starts is normal) until their timeout, then throw
// TimeoutError naming host, port and the last errno. Wire format:
// c10d/store/tcp/tcp_store_protocol.h.
//
// Threads: the server owns one thread ("c10d-tcpstore"); a client owns none. Each client object
// holds one connection, used under a mutex (so it is safe from several threads, one request at a
// time). Destroying a server-owning TCPStore stops and joins the server thread.
//
// Timeouts and failures: every request waits on the socket with poll() at most its timeout, then
// throws TimeoutError naming the key(s), host:port and the timeout; the connection is then closed
// and the next call reconnects. A connection the server closed (server gone) throws CommError
// ("connection to TCPStore at host:port lost: ..."); the next call tries one reconnect and throws
// CommError at once when that fails. Values are limited to 64 MiB per request
// (tcpstore::kMaxFrameBytes), and so are replies: a get / multiGet whose values would not fit one
// frame raises InvalidArgument naming the limit and the size (the server builds no such reply);
// a reply frame announced longer than the limit is refused unread (CommError). SIGPIPE is never
// raised (MSG_NOSIGNAL).
//
// Security (docs/stores.md "Store security"): with a shared secret (options.secret, else the
// environment variable C10D_STORE_SECRET, which c10drun sets for single-node jobs) every connection
// runs an HMAC-SHA256 challenge-response in both directions before any request; a client or server
// without the same secret is refused with "authentication failed" (Error, never retried). The
// server's limits (TCPStoreLimits) turn requests past them into InvalidArgument naming the limit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"
#include "c10d/store/tcp/tcp_store_server.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct TCPStoreOptions {
  std::string host = "127.0.0.1";  // where clients connect (and what the server binds, see below)
  uint16_t port = 29500;           // 0 with isServer: pick a free port (see TCPStore::port())
  bool isServer = false;
  // The server binds this address; "" = all interfaces ("0.0.0.0" / "::"). init() picks the
  // loopback address for a single-host job (see c10d/bootstrap/init.h).
  std::string bindAddress;
  // Client side: the local address connections come from ("" = the kernel's choice). A host with
  // tens of thousands of clients of one server (a test, store_perf) spreads them over several
  // (127.0.0.x) so that no address runs out of ephemeral ports.
  std::string sourceAddress;
  // The shared secret both sides must prove they know. Unset: C10D_STORE_SECRET (unset or empty
  // there: none). "" = none. Never logged or put in a message.
  std::optional<std::string> secret;
  // Server side: what clients may make it hold, and how long a new connection has to finish its
  // handshake (TCPStoreServerOptions; unset fields from the environment, else the defaults).
  TCPStoreLimits limits;
  std::optional<Milliseconds> handshakeTimeout;
  // When set on the server side with waitForWorkers, the constructor waits until this many
  // TCPStore clients (the server's own included; counted by the server as each first connects)
  // have connected, or throws TimeoutError at the timeout.
  int numWorkers = -1;
  bool waitForWorkers = false;
  Milliseconds timeout = kDefaultStoreTimeout;
};

class TCPStore : public Store {
 public:
  explicit TCPStore(TCPStoreOptions options);
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void setTimeout(Milliseconds timeout) override;
  using Store::set;
  using Store::wait;

  // The port the server listens on (the chosen one when constructed with port 0).
  uint16_t port() const;
  const std::string& host() const;
  // The embedded server (isServer), else nullptr.
  TCPStoreServer* server() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

C10D_NAMESPACE_END
}  // namespace c10d
