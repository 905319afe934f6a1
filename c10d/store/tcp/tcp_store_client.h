// TCPStoreConnection: one client connection to a TCPStore server (internal to store/).
//
// call() runs one request/reply exchange under the connection's mutex, so a connection is safe to
// share between threads (requests are serialized). It blocks at most its timeout, polling the
// non-blocking socket. On timeout it throws TimeoutError and drops the connection (the server may
// still answer the old request later), so the next call reconnects. When the server closes the
// connection it throws CommError; the next call makes one reconnect attempt without retrying.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/socket.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class TCPStoreConnection {
 public:
  // `secret` "" = no authentication; `sourceAddress` "" = the kernel picks the local address.
  TCPStoreConnection(std::string host, uint16_t port, std::string secret = "",
                     std::string sourceAddress = "")
      : host_(std::move(host)),
        port_(port),
        secret_(std::move(secret)),
        sourceAddress_(std::move(sourceAddress)) {}

  // Connects, retrying with backoff until `timeout`, and runs the handshake (counted as a new
  // worker).
  void connect(Milliseconds timeout) C10D_EXCLUDES(mu_);

  // Sends `request` (a finished op frame) and returns the reply body after the status byte.
  // `what` describes the request for error messages ("get of key 'k'"). Throws TimeoutError,
  // CommError, or the server's InvalidArgument / Error.
  std::vector<uint8_t> call(tcpstore::FrameWriter& request, const std::string& what,
                            Milliseconds timeout) C10D_EXCLUDES(mu_);

  // Throws InvalidArgument when a request body of `bytes` exceeds the protocol's frame limit.
  static void checkRequestSize(size_t bytes, const std::string& what);

  // "host:port".
  std::string where() const { return net::formatHostPort(host_, port_); }

 private:
  enum class State { kNew, kUp, kTimedOut, kLost };

  // Reconnects as the state requires, before `deadline`. Caller holds mu_.
  void ensureConnected(net::Clock::time_point deadline, Milliseconds timeout,
                       const std::string& what) C10D_REQUIRES(mu_);
  // The handshake on a fresh fd_; on failure fd_ is closed and the error thrown.
  void handshake(bool first, net::Clock::time_point deadline, Milliseconds timeout)
      C10D_REQUIRES(mu_);
  [[noreturn]] void authFailed(const std::string& detail) C10D_REQUIRES(mu_);
  // One exchange on fd_; caller holds mu_.
  std::vector<uint8_t> exchange(const std::vector<uint8_t>& frame, const std::string& what,
                                net::Clock::time_point deadline, Milliseconds timeout)
      C10D_REQUIRES(mu_);
  [[noreturn]] void fail(bool timedOut, int err, const char* detail, const std::string& what,
                         Milliseconds timeout) C10D_REQUIRES(mu_);

  const std::string host_;
  const uint16_t port_;
  const std::string secret_;
  const std::string sourceAddress_;
  Mutex mu_;
  net::Fd fd_ C10D_GUARDED_BY(mu_);
  State state_ C10D_GUARDED_BY(mu_) = State::kNew;
  std::string lostReason_ C10D_GUARDED_BY(mu_);
};

C10D_NAMESPACE_END
}  // namespace c10d
