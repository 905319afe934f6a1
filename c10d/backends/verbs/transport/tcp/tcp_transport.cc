#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/socket.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

// The accepted sockets whose hello is not (yet) read (closed however setup ends).
struct PendingHellos {
  struct Conn {
    Fd fd;
    TcpHello h;
    size_t got;
  };
  std::vector<Conn> conns;
};

// The address peers reach this rank at: C10D_TCP_IFADDR; else the local end of the route to
// MASTER_ADDR (the interface that reaches the job's rendezvous host reaches its peers too, and a
// hostname that /etc/hosts maps to 127.0.1.1, as Debian's does, would be unreachable from other
// hosts); else the address this host's name resolves to.
std::string localAddress(const VerbsConfig& cfg) {
  if (!cfg.tcpIfaddr.empty()) return cfg.tcpIfaddr;
  const char* master = std::getenv("MASTER_ADDR");
  if (master != nullptr && *master != '\0') {
    std::string routed = net::routeTo(master, AF_INET);
    if (!routed.empty()) return routed;
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string out = "127.0.0.1";
  if (getaddrinfo(host, nullptr, &hints, &res) == 0 && res) {
    char buf[INET_ADDRSTRLEN];
    auto* sin = reinterpret_cast<sockaddr_in*>(res->ai_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf))) out = buf;
    freeaddrinfo(res);
  }
  return out;
}

void tune(int fd, const VerbsConfig& cfg) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (cfg.tcpBufBytes == 0) return;  // 0: leave the sizes to the kernel's autotuning
  int buf = static_cast<int>(cfg.tcpBufBytes);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

void setNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL, 0);
  C10D_SYSCHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK), "verbs/tcp");
}

// Blocking full read/write used during setup only, bounded by the listener/connect deadlines.
void writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    C10D_SYSCHECK(k, "verbs/tcp: sending hello");
    c += k;
    n -= static_cast<size_t>(k);
  }
}

}  // namespace

std::optional<TcpHello> parseTcpHello(const void* bytes, size_t n, int selfRank) {
  TcpHello h;
  if (n != sizeof(h)) return std::nullopt;
  std::memcpy(&h, bytes, sizeof(h));
  if (h.magic != kTcpHelloMagic || h.rank < 0 || h.rank >= selfRank || h.channel < 0 ||
      h.channel >= kNumChannels) {
    return std::nullopt;
  }
  return h;
}

Milliseconds tcpConnectBackoff(int attempt) {
  if (attempt <= 0) return Milliseconds(1);
  return Milliseconds(attempt >= 7 ? 100 : 1 << attempt);
}

TcpTransport::TcpTransport(Store& store, int rank, int size, const VerbsConfig& cfg,
                           Milliseconds timeout)
    : rank_(rank), size_(size), conns_(kNumChannels * size), addrs_(size), closed_(size) {
  try {
    setup(store, cfg, timeout);
  } catch (...) {
    closeAll();
    throw;
  }
}

void TcpTransport::setup(Store& store, const VerbsConfig& cfg, Milliseconds timeout) {
  const int rank = rank_, size = size_;
  for (Fd& e : eventFds_) {
    e.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    C10D_SYSCHECK(e.get(), "verbs/tcp: eventfd");
  }
  const auto deadline = Clock::now() + timeout;
  const Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int lfd = listener.get();
  C10D_SYSCHECK(lfd, "verbs/tcp: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  C10D_SYSCHECK(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), "verbs/tcp: bind");
  C10D_SYSCHECK(listen(lfd, 1024), "verbs/tcp: listen");
  socklen_t len = sizeof(addr);
  C10D_SYSCHECK(getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len), "verbs/tcp");
  const std::string me = localAddress(cfg) + ":" + std::to_string(ntohs(addr.sin_port));
  store.set("addr/" + std::to_string(rank), me);
  for (int q = 0; q < size; ++q) addrs_[q] = c10d::toString(store.get("addr/" + std::to_string(q)));

  // Connect to every higher rank, once per channel.
  for (int q = rank + 1; q < size; ++q) {
    const std::string& a = addrs_[q];
    auto colon = a.rfind(':');
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_port = htons(static_cast<uint16_t>(std::atoi(a.c_str() + colon + 1)));
    C10D_CHECK_ARG(inet_pton(AF_INET, a.substr(0, colon).c_str(), &peer.sin_addr) == 1,
                   "verbs/tcp: bad address '", a, "' of rank ", q);
    for (int ch = 0; ch < kNumChannels; ++ch) {
      for (int attempt = 0;; ++attempt) {
        Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        C10D_SYSCHECK(s.get(), "verbs/tcp: socket");
        tune(s.get(), cfg);
        if (connect(s.get(), reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0) {
          conn(ch, q) = std::move(s);
          break;
        }
        const int err = errno;
        s.reset();
        if (Clock::now() >= deadline)
          C10D_THROW(TimeoutError, "verbs/tcp: rank ", rank, " could not connect to rank ", q,
                     " at ", a, ": ", detail::errnoString(err));
        std::this_thread::sleep_for(tcpConnectBackoff(attempt));
      }
      TcpHello h{kTcpHelloMagic, rank, ch};
      writeAll(fd(ch, q), &h, sizeof(h));
    }
  }
  // Accept every lower rank's connections, reading the hellos of all accepted sockets at once
  // (non-blocking) until the deadline: a stray connection cannot stall the setup, and one that
  // hangs up or sends anything but a valid hello for a free slot is dropped.
  const int expected = rank * kNumChannels;
  int arrived = 0, dropped = 0;
  PendingHellos pending;
  std::vector<pollfd> p;
  while (arrived < expected) {
    p.assign(1, pollfd{lfd, POLLIN, 0});
    for (const auto& c : pending.conns) p.push_back(pollfd{c.fd.get(), POLLIN, 0});
    const int left =
        static_cast<int>(std::chrono::duration_cast<Milliseconds>(deadline - Clock::now()).count());
    const int ready = left > 0 ? ::poll(p.data(), p.size(), left) : 0;
    if (ready < 0 && errno == EINTR) continue;
    C10D_SYSCHECK(ready, "verbs/tcp: poll");
    if (ready == 0)
      C10D_THROW(TimeoutError, "verbs/tcp: rank ", rank, " at ", me, " waited ", timeout.count(),
                 " ms for connections from lower ranks (", arrived, " of ", expected, " arrived; ",
                 pending.conns.size(), " other connection(s) sent no hello yet, ", dropped,
                 " dropped: hung up or sent no valid hello)");
    // Hellos first (p[i + 1] is pending.conns[i]), then new connections (appended at the end).
    for (size_t i = pending.conns.size(); i-- > 0;) {
      if (p[i + 1].revents == 0) continue;
      auto& c = pending.conns[i];
      ssize_t r = ::recv(c.fd.get(), reinterpret_cast<char*>(&c.h) + c.got, sizeof(c.h) - c.got, 0);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (r > 0) c.got += static_cast<size_t>(r);
      if (r > 0 && c.got < sizeof(c.h)) continue;
      const std::optional<TcpHello> h = r > 0 ? parseTcpHello(&c.h, c.got, rank) : std::nullopt;
      const bool valid = h && fd(h->channel, h->rank) == -1;
      if (valid) {
        conn(h->channel, h->rank) = std::move(c.fd);
        ++arrived;
      } else {
        if (r > 0) {
          std::fprintf(stderr,
                       "c10d verbs/tcp: rank %d dropped a connection to %s that sent no valid "
                       "hello (a stray client?)\n",
                       rank, me.c_str());
        }
        ++dropped;  // closed as it leaves the list
      }
      pending.conns.erase(pending.conns.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (p[0].revents & POLLIN) {
      int s = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (s >= 0) {
        tune(s, cfg);
        pending.conns.push_back(PendingHellos::Conn{Fd(s), TcpHello{}, 0});
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                 errno != ECONNABORTED) {
        C10D_SYSCHECK(s, "verbs/tcp: accept");
      }
    }
  }
  for (const Fd& x : conns_)
    if (x.valid()) setNonBlocking(x.get());
}

TcpTransport::~TcpTransport() {
  closeAll();
}

void TcpTransport::closeAll() {
  for (Fd& x : conns_) x.reset();
  for (Fd& e : eventFds_) e.reset();
}

namespace {

// The peer's FIN or a reset reached socket `s` (all it sent before is in our receive queue).
bool hungUp(int s) {
  pollfd p{s, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

bool TcpTransport::peerGone(int peer) {
  if (peer == rank_) return false;
  if (closed_[peer].load(std::memory_order_relaxed)) return true;
  const int s = fd(kCollectiveChannel, peer);
  return s >= 0 && hungUp(s);
}

bool TcpTransport::streamEnded(int ch, int peer) {
  if (peer == rank_) return false;
  // closed_: the p2p stream was read to its end already (tryRecvHdr saw the EOF).
  if (ch == kP2PChannel && closed_[peer].load(std::memory_order_relaxed)) return true;
  const int s = fd(ch, peer);
  return s < 0 || hungUp(s);
}

void TcpTransport::shutdownConnection(int peer) {
  const int s = fd(kCollectiveChannel, peer);
  if (s >= 0) ::shutdown(s, SHUT_RDWR);
}

void TcpTransport::abortCollectives() {
  for (int q = 0; q < size_; ++q) {
    const int s = fd(kCollectiveChannel, q);
    if (s >= 0) ::shutdown(s, SHUT_RDWR);
  }
}

void TcpTransport::abortAll() {
  for (int ch = 0; ch < kNumChannels; ++ch) {
    for (int q = 0; q < size_; ++q) {
      const int s = fd(ch, q);
      if (s >= 0) ::shutdown(s, SHUT_RDWR);
    }
  }
}

std::string TcpTransport::gonePeers() {
  std::string out;
  for (int q = 0; q < size_; ++q) {
    if (!peerGone(q)) continue;
    if (!out.empty()) out += ", ";
    out += "rank " + std::to_string(q);
  }
  return out;
}

void TcpTransport::fail(int peer, const char* what, int err) {
  // A rank that failed first (say, on a peer that died) exits and closes its sockets too: list
  // every closed peer, so the first one to go is named even when another's hang-up is seen first.
  const std::string gone = gonePeers();
  C10D_THROW(CommError, "verbs/tcp: rank ", rank_, ": ", what, " rank ", peer, " at ", addrs_[peer],
             " failed: ", err ? detail::errnoString(err) : std::string("connection closed by peer"),
             " (did rank ", peer, " die?", gone.empty() ? "" : " connections closed now: ", gone,
             ")");
}

size_t TcpTransport::trySend(int ch, int peer, const void* buf, size_t n) {
  return trySendHdr(ch, peer, nullptr, 0, buf, n);
}

size_t TcpTransport::trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                                size_t n) {
  ssize_t k;
  if (hn == 0) {
    k = ::send(fd(ch, peer), buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  } else {
    iovec iov[2] = {{const_cast<void*>(hdr), hn}, {const_cast<void*>(buf), n}};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n ? 2 : 1;
    k = ::sendmsg(fd(ch, peer), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  if (k >= 0) return static_cast<size_t>(k);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  fail(peer, "send to", errno);
}

size_t TcpTransport::tryRecv(int ch, int peer, void* buf, size_t n) {
  return tryRecvHdr(ch, peer, nullptr, 0, buf, n);
}

size_t TcpTransport::tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) {
  if (ch == kP2PChannel && closed_[peer].load(std::memory_order_relaxed)) return 0;
  ssize_t k;
  if (hn == 0) {
    k = ::recv(fd(ch, peer), buf, n, MSG_DONTWAIT);
  } else {
    iovec iov[2] = {{hdr, hn}, {buf, n}};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n ? 2 : 1;
    k = ::recvmsg(fd(ch, peer), &m, MSG_DONTWAIT);
  }
  if (k > 0) return static_cast<size_t>(k);
  if (k == 0) {
    // On the p2p channel a clean close is a peer that finished and exited: what it sent was
    // delivered; ops still waiting on it fail in the p2p engine. On collectives it is an error.
    if (ch == kP2PChannel) {
      closed_[peer].store(true, std::memory_order_relaxed);
      return 0;
    }
    fail(peer, "recv from", 0);
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  fail(peer, "recv from", errno);
}

void TcpTransport::wait(int ch, uint32_t, const std::vector<Interest>& interests,
                        Milliseconds maxWait, SpinWindow /*spin*/) {  // poll(2) sleeps at once
  std::vector<pollfd> p;
  p.reserve(interests.size() + 1);
  p.push_back(pollfd{eventFds_[ch].get(), POLLIN, 0});
  for (const auto& i : interests) {
    if (ch == kP2PChannel && closed_[i.peer].load(std::memory_order_relaxed)) continue;
    short ev = 0;
    if (i.send) ev |= POLLOUT;
    if (i.recv) ev |= POLLIN;
    p.push_back(pollfd{fd(ch, i.peer), ev, 0});
  }
  int r = ::poll(p.data(), p.size(), static_cast<int>(maxWait.count()));
  if (r > 0 && (p[0].revents & POLLIN)) {
    uint64_t v;
    ssize_t ignored = read(eventFds_[ch].get(), &v, sizeof(v));
    (void)ignored;
  }
}

void TcpTransport::wakeSelf(int ch) {
  uint64_t one = 1;
  ssize_t ignored = write(eventFds_[ch].get(), &one, sizeof(one));
  (void)ignored;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
