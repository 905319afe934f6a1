// Socket utilities (the TCPStore, gloo's config, the verbs tcp transport): an owning fd, address
// resolution (getaddrinfo, IPv4 and IPv6), listening with actionable bind errors, and connecting
// with retry and exponential backoff.
//
// Nothing here starts threads. Blocking calls take a deadline: connectWithRetry blocks at most its
// timeout; everything else returns immediately (sockets it returns are non-blocking).
#pragma once

#include "c10d/base/fd.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace net {

using Clock = std::chrono::steady_clock;

using ::c10d::deadlineAfter;  // c10d/base/types.h
// Milliseconds left until `deadline` (0 when past), clamped to what poll() accepts.
int pollTimeoutUntil(Clock::time_point deadline);

using ::c10d::Fd;

// errno as text: c10d/base/error.h's ("Address already in use (EADDRINUSE, errno 98)").
using detail::errnoName;
inline std::string describeErrno(int err) {
  return detail::errnoString(err);
}

// "host:port", with IPv6 literals bracketed ("[::1]:29500").
std::string formatHostPort(const std::string& host, uint16_t port);
// The numeric "ip:port" of a socket address.
std::string formatSockaddr(const sockaddr* addr, socklen_t len);
// The remote address of a connected socket, "ip:port" (or "?" when unknown).
std::string peerName(int fd);
// The local address the kernel would use to reach `host` (a UDP connect, which sends nothing),
// numeric; "" when `host` does not resolve or no route leads there. `family`: AF_UNSPEC, AF_INET
// or AF_INET6.
std::string routeTo(const std::string& host, int family = AF_UNSPEC);

void setNonBlocking(int fd);
void setNoDelay(int fd);

// Creates a non-blocking listening socket on bindAddress:port ("" = every interface, dual-stack
// IPv6 when available; port 0 = a free port). Throws Error naming host, port, errno and what to do.
Fd listenOn(const std::string& bindAddress, uint16_t port, int backlog);
// The local port a socket is bound to.
uint16_t localPort(int fd);

// Connects to host:port (resolved with getaddrinfo; every address tried), retrying refused or
// unreachable attempts with exponential backoff (10 ms doubling to 1 s) until `timeout`, then
// throws TimeoutError naming host, port, the timeout and the last errno. With retry = false one
// round of attempts is made and failure throws CommError. The socket returned is non-blocking
// with TCP_NODELAY. A non-empty `sourceAddress` (a numeric IP of this host) is bound before
// connecting (IP_BIND_ADDRESS_NO_PORT: the port is chosen per destination at connect time), so
// many connections to one server can spread over several local addresses (each has its own
// ephemeral port range); InvalidArgument when it is not a numeric address.
Fd connectTo(const std::string& host, uint16_t port, Milliseconds timeout, bool retry = true,
             const std::string& sourceAddress = "");

// Raises the soft RLIMIT_NOFILE to the hard limit (best effort); returns the new soft limit.
uint64_t raiseFdLimit();

}  // namespace net
C10D_NAMESPACE_END
}  // namespace c10d
