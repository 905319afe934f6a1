// TCPStoreServer: the epoll loop, accepting, reading and writing. The protocol (framing, the
// handshake, requests, limits) is ServerCore's (tcp_store_server_core.h); this file only moves
// bytes between sockets and the core.
#include "c10d/store/tcp/tcp_store_server.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <future>
#include <thread>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/socket.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "c10d/store/tcp/tcp_store_server_core.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using tcpstore::ServerCore;
using Conn = ServerCore::Conn;

namespace {

constexpr uint64_t kListenId = 1;
constexpr uint64_t kWakeId = 2;
constexpr size_t kReadChunk = 64 * 1024;
// Bytes read from one connection per readiness event before serving the others.
constexpr size_t kReadBudget = 1 << 20;
// A connection keeps at most this much idle output capacity.
constexpr size_t kKeepCapacity = 1 << 20;
// Longest epoll wait; the loop also wakes for the next handshake deadline.
constexpr int kMaxWaitMs = 1000;

// epoll_ctl; returns 0 or the errno.
int epollCtl(int epfd, int op, int fd, uint32_t events, uint64_t id) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  return epoll_ctl(epfd, op, fd, &ev) == 0 ? 0 : errno;
}

// The numeric "ip:port" a socket is bound to.
std::string localName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return net::formatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

}  // namespace

// Everything below is touched only by the loop thread ("c10d-tcpstore"), except what ServerCore
// documents as thread-safe.
class TCPStoreServer::Loop {
 public:
  explicit Loop(const TCPStoreServerOptions& options);
  ~Loop();

  uint16_t port() const { return port_; }
  const std::string& boundAddress() const { return bound_; }
  ServerCore& core() { return *core_; }

 private:
  void run();
  void acceptAll();
  void onReadable(Conn& c);
  void onWritable(Conn& c);
  // Sends what the core queued, resuming connections whose backlog drained; then frees the dead.
  void flushAll();
  void flush(Conn& c);

  net::Fd listenFd_;
  net::Fd epollFd_;
  net::Fd wakeFd_;
  net::Fd spareFd_;  // kept open so that EMFILE can still accept-and-close
  uint16_t port_ = 0;
  std::string bound_;
  std::unique_ptr<ServerCore> core_;
  std::vector<uint8_t> scratch_;
  std::vector<uint64_t> outIds_;
  bool loggedEmfile_ = false;

  std::thread thread_;  // last: started after everything above exists
};

TCPStoreServer::Loop::Loop(const TCPStoreServerOptions& options) {
  tcpstore::ServerConfig config = tcpstore::resolveServerConfig(options);
  net::raiseFdLimit();
  listenFd_ = net::listenOn(options.bindAddress, options.port, SOMAXCONN);
  port_ = net::localPort(listenFd_.get());
  bound_ = localName(listenFd_.get());
  core_ = std::make_unique<ServerCore>(std::move(config),
                                       detail::str("c10d TCPStore server on port ", port_));
  epollFd_ = net::Fd(epoll_create1(EPOLL_CLOEXEC));
  C10D_SYSCHECK(epollFd_.get(), "TCPStore server on port ", port_);
  wakeFd_ = net::Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  C10D_SYSCHECK(wakeFd_.get(), "TCPStore server on port ", port_);
  spareFd_ = net::Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (auto [fd, id] : {std::pair<int, uint64_t>{listenFd_.get(), kListenId},
                        std::pair<int, uint64_t>{wakeFd_.get(), kWakeId}}) {
    if (int err = epollCtl(epollFd_.get(), EPOLL_CTL_ADD, fd, EPOLLIN, id)) {
      C10D_THROW(Error, "TCPStore server on port ", port_,
                 ": epoll_ctl failed: ", net::describeErrno(err));
    }
  }
  scratch_.resize(kReadChunk);
  // Return once the thread runs, not while it is still starting: a process that forks right after
  // (a test harness, a launcher) must not fork while the thread holds a lock the child would
  // inherit held (ASan's allocator (GCC 12) is not fork-safe during a thread's start; EtcdStore's
  // constructor hung that way). The loop then sleeps in epoll_wait holding nothing.
  // The thread owns the promise: the shared state outlives set_value's wake-up of this wait.
  std::promise<void> started;
  std::future<void> running = started.get_future();
  thread_ = std::thread([this, started = std::move(started)]() mutable {
    started.set_value();
    run();
  });
  running.wait();
}

TCPStoreServer::Loop::~Loop() {
  uint64_t one = 1;
  ssize_t rc = ::write(wakeFd_.get(), &one, sizeof(one));
  (void)rc;  // an eventfd write only fails if the counter overflows; the loop wakes either way
  if (thread_.joinable()) thread_.join();
}

void TCPStoreServer::Loop::run() {
  pthread_setname_np(pthread_self(), "c10d-tcpstore");
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  bool stop = false;
  try {
    while (!stop) {
      // Events drive all work; the timeout only serves the handshake deadlines.
      const auto next = core_->expireHandshakes();
      flushAll();
      int waitMs = kMaxWaitMs;
      if (next != ServerCore::Clock::time_point::max()) {
        waitMs = std::min(waitMs, net::pollTimeoutUntil(next));
      }
      int n = epoll_wait(epollFd_.get(), events, kMaxEvents, waitMs);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::fprintf(stderr, "c10d TCPStore server on port %u: epoll_wait failed: %s; stopping\n",
                     port_, net::describeErrno(errno).c_str());
        break;
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        const uint32_t ev = events[i].events;
        if (id == kWakeId) {
          stop = true;
        } else if (id == kListenId) {
          acceptAll();
        } else if (Conn* c = core_->find(id)) {
          if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) onReadable(*c);
          if ((ev & EPOLLOUT) && !c->dead) onWritable(*c);
        }
      }
      // Resume connections whose parked request was answered (they may have more frames queued).
      core_->runWoken();
      flushAll();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d TCPStore server on port %u: event loop failed: %s; stopping\n",
                 port_, e.what());
  }
  // Closing every connection tells the clients the server is gone.
  core_->closeAll();
  listenFd_.reset();
}

void TCPStoreServer::Loop::acceptAll() {
  while (true) {
    // The peer's address comes with the accept (no getpeername per connection).
    sockaddr_storage peerAddr{};
    socklen_t peerLen = sizeof(peerAddr);
    int fd = accept4(listenFd_.get(), reinterpret_cast<sockaddr*>(&peerAddr), &peerLen,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED) continue;
      if ((err == EMFILE || err == ENFILE) && spareFd_.valid()) {
        // Out of descriptors: accept and drop the connection so it does not spin the loop.
        if (!loggedEmfile_) {
          std::fprintf(stderr,
                       "c10d TCPStore server on port %u: out of file descriptors (%s) with %lld "
                       "clients; refusing new clients (raise ulimit -n, or lower "
                       "C10D_STORE_MAX_CONNECTIONS)\n",
                       port_, net::errnoName(err).c_str(),
                       static_cast<long long>(core_->numConnections()));
          loggedEmfile_ = true;
        }
        spareFd_.reset();
        net::Fd dropped(accept4(listenFd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        dropped.reset();
        spareFd_ = net::Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
        continue;
      }
      std::fprintf(stderr, "c10d TCPStore server on port %u: accept failed: %s\n", port_,
                   net::describeErrno(err).c_str());
      return;
    }
    net::Fd owned(fd);
    std::string peer = net::formatSockaddr(reinterpret_cast<sockaddr*>(&peerAddr), peerLen);
    if (!core_->acceptingConnections()) {
      core_->refuseUnseen(peer);
      continue;  // closed unanswered: the flood is past what the limit's courtesy covers
    }
    net::setNoDelay(fd);
    Conn& c = core_->open(std::move(peer));
    c.fd = std::move(owned);
    if (int err = epollCtl(epollFd_.get(), EPOLL_CTL_ADD, fd, EPOLLIN, c.id)) {
      core_->fail(c, "epoll_ctl: " + net::describeErrno(err));
    }
  }
}

void TCPStoreServer::Loop::onReadable(Conn& c) {
  size_t budget = kReadBudget;
  while (!c.dead && budget > 0) {
    ssize_t n = ::recv(c.fd.get(), scratch_.data(), scratch_.size(), 0);
    if (n > 0) {
      budget -= std::min(budget, static_cast<size_t>(n));
      core_->received(c, scratch_.data(), static_cast<size_t>(n));
      // A short read drained the socket; level-triggered epoll reports anything newer.
      if (static_cast<size_t>(n) < scratch_.size()) return;
      continue;
    }
    if (n == 0) {
      core_->peerClosed(c);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    // Resets are how a client that timed out or died leaves; not worth a log line.
    core_->fail(c,
                errno == ECONNRESET ? std::string() : "recv failed: " + net::describeErrno(errno));
    return;
  }
}

void TCPStoreServer::Loop::onWritable(Conn& c) {
  flush(c);
  if (!c.dead && c.out.size() == c.outBegin) core_->resume(c);
}

void TCPStoreServer::Loop::flushAll() {
  // Flushing can resume a connection, which can queue more output: repeat until quiet.
  for (core_->takeOutput(&outIds_); !outIds_.empty(); core_->takeOutput(&outIds_)) {
    for (uint64_t id : outIds_) {
      Conn* c = core_->findAny(id);
      if (c == nullptr) continue;
      const bool wasBlocked = c->pollingOut;
      flush(*c);
      if (wasBlocked && !c->dead && c->out.size() == c->outBegin) core_->resume(*c);
    }
  }
  core_->reapDead();
}

void TCPStoreServer::Loop::flush(Conn& c) {
  // A dead connection still gets its last reply ("authentication failed") if the socket takes it.
  while (c.outBegin < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.outBegin, c.out.size() - c.outBegin,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.outBegin += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // The peer is gone (EPIPE / ECONNRESET): a client that timed out or exited.
    core_->fail(c, (errno == EPIPE || errno == ECONNRESET || c.dead)
                       ? std::string()
                       : "send failed: " + net::describeErrno(errno));
    return;
  }
  if (c.dead) return;
  const bool drained = c.outBegin == c.out.size();
  if (drained) {
    c.out.clear();
    c.outBegin = 0;
    if (c.out.capacity() > kKeepCapacity) std::vector<uint8_t>().swap(c.out);
  } else if (c.outBegin >= c.out.size() / 2) {
    c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.outBegin));
    c.outBegin = 0;
  }
  if (drained == c.pollingOut) {
    c.pollingOut = !drained;
    const uint32_t events = drained ? EPOLLIN : EPOLLIN | EPOLLOUT;
    if (int err = epollCtl(epollFd_.get(), EPOLL_CTL_MOD, c.fd.get(), events, c.id)) {
      core_->fail(c, "epoll_ctl failed: " + net::describeErrno(err));
    }
  }
}

TCPStoreServer::TCPStoreServer(const TCPStoreServerOptions& options)
    : loop_(std::make_unique<Loop>(options)) {}

TCPStoreServer::TCPStoreServer(const std::string& bindAddress, uint16_t port)
    : TCPStoreServer([&] {
        TCPStoreServerOptions o;
        o.bindAddress = bindAddress;
        o.port = port;
        return o;
      }()) {}

TCPStoreServer::~TCPStoreServer() = default;

uint16_t TCPStoreServer::port() const {
  return loop_->port();
}

std::string TCPStoreServer::boundAddress() const {
  return loop_->boundAddress();
}

bool TCPStoreServer::authRequired() const {
  return !loop_->core().config().secret.empty();
}

void TCPStoreServer::waitForWorkers(int n, Milliseconds timeout) {
  loop_->core().waitForWorkers(n, timeout, loop_->port());
}

int64_t TCPStoreServer::numWorkers() const {
  return loop_->core().numWorkers();
}

int64_t TCPStoreServer::numConnections() const {
  return loop_->core().numConnections();
}

C10D_NAMESPACE_END
}  // namespace c10d
