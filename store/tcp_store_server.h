// TCPStoreServer: the TCPStore server, usable standalone (tests, store_perf) or embedded in the
// rank-0 TCPStore.
//
// The constructor binds and listens (throwing Error naming host, port and errno on failure), then
// starts ONE thread, "c10d-tcpstore", that runs an epoll event loop over non-blocking sockets and
// serves every client: thousands of connections, requests answered in order per connection. A
// `get`/`wait`/`multiGet` of a missing key parks the request on the server; the reply is pushed
// when the key is set (no polling). A malformed request closes that client only, with one line on
// stderr naming the peer. Timeouts are the clients' business: the server never times a client out.
//
// The destructor wakes the loop (eventfd), joins the thread and closes every connection; clients
// then see their connection lost. The constructor raises the soft RLIMIT_NOFILE to the hard limit.
// Public methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "c10d/types.h"

namespace c10d {

class TCPStoreServer {
 public:
  // bindAddress "" = every interface (IPv6 dual-stack where available); port 0 = a free port.
  explicit TCPStoreServer(const std::string& bindAddress = "", uint16_t port = 0);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  // The port the server listens on.
  uint16_t port() const;

  // Blocks until `n` TCPStore clients have connected (counted by their first hello; reconnects do
  // not count), or throws TimeoutError after `timeout`.
  void waitForWorkers(int n, Milliseconds timeout);
  // Clients counted as above so far.
  int64_t numWorkers() const;
  // Connections currently open (any peer).
  int64_t numConnections() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

}  // namespace c10d
