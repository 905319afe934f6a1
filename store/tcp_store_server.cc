// TCPStoreServer: the epoll loop, accepting, reading and writing (requests:
// tcp_store_server_ops.cc).
#include "store/tcp_store_server.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "c10d/error.h"
#include "store/tcp_store_server_loop.h"

namespace c10d {
namespace {

constexpr uint64_t kListenId = 1;
constexpr uint64_t kWakeId = 2;
constexpr size_t kReadChunk = 64 * 1024;
// Bytes read from one connection per readiness event before serving the others.
constexpr size_t kReadBudget = 1 << 20;
// A connection keeps at most this much idle buffer capacity.
constexpr size_t kKeepCapacity = 1 << 20;
constexpr size_t kFrameHeader = 4;

// epoll_ctl; returns 0 or the errno.
int epollCtl(int epfd, int op, int fd, uint32_t events, uint64_t id) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  return epoll_ctl(epfd, op, fd, &ev) == 0 ? 0 : errno;
}

// Drops consumed bytes at the front of a buffer; frees large idle buffers.
void compact(std::vector<uint8_t>* buf, size_t* begin) {
  if (*begin == buf->size()) {
    buf->clear();
    *begin = 0;
    if (buf->capacity() > kKeepCapacity) std::vector<uint8_t>().swap(*buf);
  } else if (*begin > 0 && *begin >= buf->size() / 2) {
    buf->erase(buf->begin(), buf->begin() + static_cast<std::ptrdiff_t>(*begin));
    *begin = 0;
  }
}

}  // namespace

TCPStoreServer::Loop::Loop(const std::string& bindAddress, uint16_t port) {
  net::raiseFdLimit();
  listenFd_ = net::listenOn(bindAddress, port, SOMAXCONN);
  port_ = net::localPort(listenFd_.get());
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
  thread_ = std::thread([this] { run(); });
}

TCPStoreServer::Loop::~Loop() {
  uint64_t one = 1;
  ssize_t rc = ::write(wakeFd_.get(), &one, sizeof(one));
  (void)rc;  // an eventfd write only fails if the counter overflows; the loop wakes either way
  if (thread_.joinable()) thread_.join();
}

void TCPStoreServer::Loop::waitForWorkers(int n, Milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!workersCv_.wait_until(lock, net::deadlineAfter(timeout), [&] { return workers_ >= n; })) {
    C10D_THROW(TimeoutError, "TCPStore server on port ", port_, ": only ", workers_, " of ", n,
               " workers connected within the timeout of ", timeout.count(), " ms");
  }
}

int64_t TCPStoreServer::Loop::numWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_;
}

void TCPStoreServer::Loop::run() {
  pthread_setname_np(pthread_self(), "c10d-tcpstore");
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  bool stop = false;
  try {
    while (!stop) {
      // The timeout only bounds the wait; all work is event driven.
      int n = epoll_wait(epollFd_.get(), events, kMaxEvents, 1000);
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
        } else if (Conn* c = find(id)) {
          if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) onReadable(*c);
          if ((ev & EPOLLOUT) && !c->dead) onWritable(*c);
        }
      }
      // Resume connections whose parked request was answered (they may have more frames queued).
      for (size_t i = 0; i < runnable_.size(); ++i) {
        if (Conn* c = find(runnable_[i])) processInput(*c);
      }
      runnable_.clear();
      reapDead();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d TCPStore server on port %u: event loop failed: %s; stopping\n",
                 port_, e.what());
  }
  // Closing every connection tells the clients the server is gone.
  numConns_ -= static_cast<int64_t>(conns_.size());
  conns_.clear();
  listenFd_.reset();
}

TCPStoreServer::Loop::Conn* TCPStoreServer::Loop::find(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second->dead) return nullptr;
  return it->second.get();
}

void TCPStoreServer::Loop::acceptAll() {
  while (true) {
    int fd = accept4(listenFd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED) continue;
      if ((err == EMFILE || err == ENFILE) && spareFd_.valid()) {
        // Out of descriptors: accept and drop the connection so it does not spin the loop.
        if (!loggedEmfile_) {
          std::fprintf(stderr,
                       "c10d TCPStore server on port %u: out of file descriptors (%s) with %zu "
                       "clients; refusing new clients (raise ulimit -n)\n",
                       port_, net::errnoName(err).c_str(), conns_.size());
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
    auto conn = std::make_unique<Conn>();
    conn->id = nextId_++;
    conn->fd = net::Fd(fd);
    conn->peer = net::peerName(fd);
    net::setNoDelay(fd);
    if (int err = epollCtl(epollFd_.get(), EPOLL_CTL_ADD, fd, EPOLLIN, conn->id)) {
      std::fprintf(stderr, "c10d TCPStore server on port %u: dropping client %s: epoll_ctl: %s\n",
                   port_, conn->peer.c_str(), net::describeErrno(err).c_str());
      continue;
    }
    conns_.emplace(conn->id, std::move(conn));
    ++numConns_;
  }
}

void TCPStoreServer::Loop::onReadable(Conn& c) {
  size_t budget = kReadBudget;
  while (!c.dead && budget > 0) {
    const size_t pending = c.in.size() - c.inBegin;
    if (pending >= kFrameHeader + tcpstore::kMaxFrameBytes) {
      // Only possible while a request is parked or replies back up: the client ignores the
      // one-request-in-flight rule.
      closeConn(c, detail::str("sent ", pending, " bytes ahead of its replies"));
      return;
    }
    ssize_t n = ::recv(c.fd.get(), scratch_.data(), scratch_.size(), 0);
    if (n > 0) {
      if (pending >= kFrameHeader) {
        // Reserve a large frame once instead of growing towards it.
        const size_t need = c.inBegin + kFrameHeader + tcpstore::readFrameLength(&c.in[c.inBegin]);
        if (need <= c.inBegin + kFrameHeader + tcpstore::kMaxFrameBytes && need > c.in.capacity())
          c.in.reserve(need);
      }
      c.in.insert(c.in.end(), scratch_.data(), scratch_.data() + n);
      budget -= std::min(budget, static_cast<size_t>(n));
      processInput(c);
      // A short read drained the socket; level-triggered epoll reports anything newer.
      if (static_cast<size_t>(n) < scratch_.size()) return;
      continue;
    }
    if (n == 0) {
      const size_t left = c.in.size() - c.inBegin;
      // A clean close between frames is how clients say goodbye; mid-frame it is a truncation.
      closeConn(c, left == 0 ? std::string()
                             : detail::str("connection closed in the middle of a frame (", left,
                                           " bytes of it received)"));
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    // Resets are how a client that timed out or died leaves; not worth a log line.
    closeConn(c, errno == ECONNRESET ? std::string() : "recv failed: " + net::describeErrno(errno));
    return;
  }
}

void TCPStoreServer::Loop::onWritable(Conn& c) {
  flush(c);
  if (!c.dead && c.out.size() == c.outBegin) processInput(c);
}

void TCPStoreServer::Loop::processInput(Conn& c) {
  while (!c.dead && !c.parked && c.out.size() - c.outBegin <= tcpstore::kMaxFrameBytes) {
    const size_t avail = c.in.size() - c.inBegin;
    if (avail < kFrameHeader) break;
    const uint32_t len = tcpstore::readFrameLength(&c.in[c.inBegin]);
    if (len == 0 || len > tcpstore::kMaxFrameBytes) {
      closeConn(
          c, detail::str("frame length ", len, " is outside [1, ", tcpstore::kMaxFrameBytes, "]"));
      return;
    }
    if (avail < kFrameHeader + len) break;
    std::string why;
    if (!handleFrame(c, &c.in[c.inBegin + kFrameHeader], len, &why)) {
      closeConn(c, why);
      return;
    }
    c.inBegin += kFrameHeader + len;
  }
  compact(&c.in, &c.inBegin);
}

void TCPStoreServer::Loop::reply(Conn& c, tcpstore::FrameWriter& w) {
  if (c.dead) return;
  auto& frame = w.finish();
  if (c.out.size() == c.outBegin) {
    c.out.swap(frame);  // no copy of large values
    c.outBegin = 0;
  } else {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }
  flush(c);
}

void TCPStoreServer::Loop::flush(Conn& c) {
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
    closeConn(c, (errno == EPIPE || errno == ECONNRESET)
                     ? std::string()
                     : "send failed: " + net::describeErrno(errno));
    return;
  }
  const bool drained = c.outBegin == c.out.size();
  compact(&c.out, &c.outBegin);
  if (drained == c.pollingOut) {
    c.pollingOut = !drained;
    const uint32_t events = drained ? EPOLLIN : EPOLLIN | EPOLLOUT;
    if (int err = epollCtl(epollFd_.get(), EPOLL_CTL_MOD, c.fd.get(), events, c.id)) {
      closeConn(c, "epoll_ctl failed: " + net::describeErrno(err));
    }
  }
}

void TCPStoreServer::Loop::closeConn(Conn& c, const std::string& why) {
  if (c.dead) return;
  if (!why.empty()) {
    std::fprintf(stderr, "c10d TCPStore server on port %u: closing client %s: %s\n", port_,
                 c.peer.c_str(), why.c_str());
  }
  unpark(c);
  c.dead = true;
  dead_.push_back(c.id);
}

void TCPStoreServer::Loop::reapDead() {
  for (uint64_t id : dead_) {
    // Closing the fd also removes it from the epoll set.
    if (conns_.erase(id) > 0) --numConns_;
  }
  dead_.clear();
}

TCPStoreServer::TCPStoreServer(const std::string& bindAddress, uint16_t port)
    : loop_(std::make_unique<Loop>(bindAddress, port)) {}

TCPStoreServer::~TCPStoreServer() = default;

uint16_t TCPStoreServer::port() const {
  return loop_->port();
}

void TCPStoreServer::waitForWorkers(int n, Milliseconds timeout) {
  loop_->waitForWorkers(n, timeout);
}

int64_t TCPStoreServer::numWorkers() const {
  return loop_->numWorkers();
}

int64_t TCPStoreServer::numConnections() const {
  return loop_->numConnections();
}

}  // namespace c10d
