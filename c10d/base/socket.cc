#include "c10d/base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace net {
namespace {

// getaddrinfo results, freed on scope exit.
struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head != nullptr) freeaddrinfo(head);
  }
};

// Resolves host:port; returns 0 or the getaddrinfo error code.
int resolve(const std::string& host, uint16_t port, int flags, AddrInfoList* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  const std::string service = std::to_string(port);
  return getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out->head);
}

std::string gaiError(int rc, int savedErrno) {
  if (rc == EAI_SYSTEM) return describeErrno(savedErrno);
  return detail::str(gai_strerror(rc), " (getaddrinfo ", rc, ")");
}

// Explains a failed bind of host:port: names both, the errno, and what to do about it.
[[noreturn]] void throwBindError(const std::string& host, uint16_t port, int err) {
  const std::string where = detail::str("port ", port, " on ", host);
  switch (err) {
    case EADDRINUSE:
      C10D_THROW(Error, "TCPStore server: ", where, " is in use (EADDRINUSE): pick another ",
                 "MASTER_PORT or pass port 0 to pick a free one");
    case EACCES:
      C10D_THROW(Error, "TCPStore server: binding ", where, " is not permitted (EACCES): ports ",
                 "below 1024 need privileges; pick another MASTER_PORT");
    case EADDRNOTAVAIL:
      C10D_THROW(Error, "TCPStore server: cannot bind ", where, " (EADDRNOTAVAIL): ", host,
                 " is not an address of this machine; fix the bind address or MASTER_ADDR");
    default:
      C10D_THROW(Error, "TCPStore server: cannot listen on ", where, ": ", describeErrno(err));
  }
}

// socket + SO_REUSEADDR + bind + listen on one address; returns the fd or -1 with errno set.
int tryListen(int family, const sockaddr* addr, socklen_t len, int backlog, bool dualStack) {
  Fd fd(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return -1;
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET6) {
    int v6only = dualStack ? 0 : 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  if (bind(fd.get(), addr, len) != 0 || listen(fd.get(), backlog) != 0) return -1;
  return fd.release();
}

// One non-blocking connect to `ai`, from `source` when given (its port 0: the kernel picks one at
// connect time, per destination), waiting for completion until `deadline`. Returns the fd, or an
// invalid Fd with *err set.
Fd tryConnect(const addrinfo* ai, const addrinfo* source, Clock::time_point deadline, int* err) {
  Fd fd(socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *err = errno;
    return Fd();
  }
  if (source != nullptr) {
    // Without IP_BIND_ADDRESS_NO_PORT a bind to port 0 reserves a port for every destination,
    // and the ports of one address run out at the size of the ephemeral range.
    int one = 1;
    setsockopt(fd.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
    if (bind(fd.get(), source->ai_addr, source->ai_addrlen) != 0) {
      *err = errno;
      return Fd();
    }
  }
  if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    return Fd();
  }
  pollfd pfd{fd.get(), POLLOUT, 0};
  int rc;
  do {
    rc = poll(&pfd, 1, pollTimeoutUntil(deadline));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    *err = ETIMEDOUT;
    return Fd();
  }
  int soErr = 0;
  socklen_t soLen = sizeof(soErr);
  if (rc < 0 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soErr, &soLen) != 0) {
    *err = errno;
    return Fd();
  }
  if (soErr != 0) {
    *err = soErr;
    return Fd();
  }
  return fd;
}

}  // namespace

int pollTimeoutUntil(Clock::time_point deadline) {
  // Rounded up: poll() must not return before the deadline (callers treat 0 ready as expiry).
  const auto left = std::chrono::ceil<Milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

std::string routeTo(const std::string& host, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "29500", &hints, &res) != 0 || res == nullptr) return "";
  std::string out;
  for (addrinfo* ai = res; ai != nullptr && out.empty(); ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      continue;
    }
    char buf[INET6_ADDRSTRLEN] = {0};
    const void* src =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(local.ss_family, src, buf, sizeof(buf)) != nullptr) out = buf;
  }
  freeaddrinfo(res);
  return out;
}

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return detail::str("[", host, "]:", port);
  return detail::str(host, ":", port);
}

std::string formatSockaddr(const sockaddr* addr, socklen_t len) {
  sockaddr_in v4{};
  const auto* a6 = reinterpret_cast<const sockaddr_in6*>(addr);
  if (addr->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
    // A dual-stack server sees IPv4 peers as ::ffff:a.b.c.d; print them as plain IPv4.
    v4.sin_family = AF_INET;
    v4.sin_port = a6->sin6_port;
    std::memcpy(&v4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
    addr = reinterpret_cast<const sockaddr*>(&v4);
    len = sizeof(v4);
  }
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(addr, len, host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return formatHostPort(host, static_cast<uint16_t>(std::atoi(serv)));
}

std::string peerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return formatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  C10D_SYSCHECK(flags, "fd ", fd);
  C10D_SYSCHECK(fcntl(fd, F_SETFL, flags | O_NONBLOCK), "fd ", fd);
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Fd listenOn(const std::string& bindAddress, uint16_t port, int backlog) {
  if (bindAddress.empty()) {
    // Every interface: one dual-stack IPv6 socket, or IPv4 only where IPv6 is unavailable.
    sockaddr_in6 a6{};
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_any;
    a6.sin6_port = htons(port);
    int fd = tryListen(AF_INET6, reinterpret_cast<sockaddr*>(&a6), sizeof(a6), backlog, true);
    if (fd >= 0) return Fd(fd);
    if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL)
      throwBindError("0.0.0.0 / [::]", port, errno);
    sockaddr_in a4{};
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    a4.sin_port = htons(port);
    fd = tryListen(AF_INET, reinterpret_cast<sockaddr*>(&a4), sizeof(a4), backlog, false);
    if (fd < 0) throwBindError("0.0.0.0", port, errno);
    return Fd(fd);
  }
  AddrInfoList list;
  int rc = resolve(bindAddress, port, AI_PASSIVE, &list);
  if (rc != 0) {
    C10D_THROW(Error, "TCPStore server: cannot resolve bind address '", bindAddress,
               "': ", gaiError(rc, errno));
  }
  int lastErr = EADDRNOTAVAIL;
  for (addrinfo* ai = list.head; ai != nullptr; ai = ai->ai_next) {
    int fd = tryListen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, backlog, false);
    if (fd >= 0) return Fd(fd);
    lastErr = errno;
  }
  throwBindError(bindAddress, port, lastErr);
}

uint16_t localPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  C10D_SYSCHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len), "fd ", fd);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

Fd connectTo(const std::string& host, uint16_t port, Milliseconds timeout, bool retry,
             const std::string& sourceAddress) {
  AddrInfoList sources;
  if (!sourceAddress.empty()) {
    int rc = resolve(sourceAddress, 0, AI_PASSIVE | AI_NUMERICHOST, &sources);
    if (rc != 0) {
      C10D_THROW(InvalidArgument, "connecting to ", formatHostPort(host, port),
                 ": source address '", sourceAddress,
                 "' is not a numeric IP address: ", gaiError(rc, errno));
    }
  }
  const auto start = Clock::now();
  const auto deadline = deadlineAfter(timeout);
  Milliseconds backoff(10);
  std::string lastError = "no attempt made";
  int attempts = 0;
  while (true) {
    ++attempts;
    AddrInfoList list;
    int rc = resolve(host, port, 0, &list);
    if (rc != 0) {
      lastError = detail::str("cannot resolve '", host, "': ", gaiError(rc, errno));
    } else {
      for (addrinfo* ai = list.head; ai != nullptr; ai = ai->ai_next) {
        const addrinfo* source = sources.head;
        while (source != nullptr && source->ai_family != ai->ai_family) source = source->ai_next;
        if (sources.head != nullptr && source == nullptr) {
          lastError = detail::str("source address ", sourceAddress, " is not of the family of ",
                                  formatSockaddr(ai->ai_addr, ai->ai_addrlen));
          continue;
        }
        int err = 0;
        Fd fd = tryConnect(ai, source, deadline, &err);
        if (fd.valid()) {
          setNoDelay(fd.get());
          return fd;
        }
        lastError = describeErrno(err);
        if (source != nullptr && (err == EADDRNOTAVAIL || err == EADDRINUSE)) {
          lastError += detail::str(" (from source address ", sourceAddress,
                                   ": is it an address of this host, with ports left?)");
        }
      }
    }
    const auto now = Clock::now();
    if (!retry) {
      C10D_THROW(CommError, "cannot connect to TCPStore at ", formatHostPort(host, port), ": ",
                 lastError);
    }
    if (now >= deadline) {
      const auto waited = std::chrono::duration_cast<Milliseconds>(now - start).count();
      C10D_THROW(TimeoutError, "connecting to TCPStore at ", formatHostPort(host, port),
                 " timed out after ", waited, " ms (timeout ", timeout.count(), " ms, ", attempts,
                 " attempts); last error: ", lastError,
                 "; is the server (rank 0) running and MASTER_ADDR/MASTER_PORT right?");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, Milliseconds(1000));
  }
}

uint64_t raiseFdLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace net
C10D_NAMESPACE_END
}  // namespace c10d
