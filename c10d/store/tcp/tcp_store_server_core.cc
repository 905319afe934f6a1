// ServerCore: connections, framing, the handshake and logging (requests: tcp_store_server_ops.cc).
#include "c10d/store/tcp/tcp_store_server_core.h"

#include <cstdio>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/socket.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {
namespace {

constexpr size_t kFrameHeader = 4;
// Input buffered before the rest of a long frame is reserved at once (see received()).
constexpr size_t kReserveAfter = 256 * 1024;
// A connection keeps at most this much idle buffer capacity.
constexpr size_t kKeepCapacity = 1 << 20;
// Peer-triggered log lines: at most kLogBurst per kLogWindow.
constexpr int kLogBurst = 20;
constexpr std::chrono::seconds kLogWindow{10};

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

ServerCore::ServerCore(ServerConfig config, std::string name, Hooks hooks)
    : config_(std::move(config)), name_(std::move(name)), hooks_(std::move(hooks)) {
  if (!hooks_.log) {
    hooks_.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  }
  if (!hooks_.clock) hooks_.clock = [] { return Clock::now(); };
  if (!hooks_.nonce) hooks_.nonce = [] { return randomNonce(); };
}

ServerCore::~ServerCore() = default;

void ServerCore::refuseUnseen(const std::string& peer) {
  logPeer(detail::str(name_, ": refused connection from ", peer, ": ", numConns_.load(),
                      " connections are open, past the limit of ", config_.maxConnections,
                      " (maxConnections, C10D_STORE_MAX_CONNECTIONS)"));
}

ServerCore::Conn& ServerCore::open(std::string peer) {
  auto conn = std::make_unique<Conn>();
  Conn& c = *conn;
  c.id = nextId_++;
  c.peer = std::move(peer);
  // Past the limit the connection is still taken, only to tell the client why at its hello.
  c.refused = numConns_.load() >= config_.maxConnections;
  handshakes_.emplace_back(hooks_.clock() + config_.handshakeTimeout, c.id);
  conns_.emplace(c.id, std::move(conn));
  ++numConns_;
  return c;
}

void ServerCore::received(Conn& c, const uint8_t* data, size_t n) {
  if (c.dead) return;
  const size_t pending = c.in.size() - c.inBegin;
  if (pending >= kFrameHeader + kMaxFrameBytes) {
    // Only possible while a request is parked or replies back up: the client ignores the
    // one-request-in-flight rule.
    closeConn(c, detail::str("sent ", pending, " bytes ahead of its replies"));
    return;
  }
  if (pending >= kReserveAfter && c.phase == Phase::kReady) {
    // Reserve a large frame once instead of growing towards it, but only once a good part of it
    // arrived: a header alone must not make the server allocate 64 MiB.
    const size_t need = c.inBegin + kFrameHeader + readFrameLength(&c.in[c.inBegin]);
    if (need <= c.inBegin + kFrameHeader + kMaxFrameBytes && need > c.in.capacity())
      c.in.reserve(std::min(need, c.inBegin + 4 * (pending + n)));
  }
  c.in.insert(c.in.end(), data, data + n);
  processInput(c);
}

void ServerCore::peerClosed(Conn& c) {
  const size_t left = c.in.size() - c.inBegin;
  // A clean close between frames is how clients say goodbye; mid-frame it is a truncation.
  closeConn(c, left == 0 ? std::string()
                         : detail::str("connection closed in the middle of a frame (", left,
                                       " bytes of it received)"));
}

void ServerCore::fail(Conn& c, const std::string& why) {
  closeConn(c, why);
}

void ServerCore::resume(Conn& c) {
  processInput(c);
}

void ServerCore::runWoken() {
  // Resuming may wake more connections (a queued set behind an answered get).
  for (size_t i = 0; i < woken_.size(); ++i) {
    if (Conn* c = find(woken_[i])) processInput(*c);
  }
  woken_.clear();
}

void ServerCore::processInput(Conn& c) {
  while (!c.dead && !c.parked && c.out.size() - c.outBegin <= kMaxFrameBytes) {
    const size_t avail = c.in.size() - c.inBegin;
    if (avail < kFrameHeader) break;
    const uint32_t len = readFrameLength(&c.in[c.inBegin]);
    const bool ready = c.phase == Phase::kReady;
    const uint32_t max = ready ? kMaxFrameBytes : kMaxHandshakeFrameBytes;
    if (len == 0 || len > max) {
      if (ready) {
        closeConn(c, detail::str("frame length ", len, " is outside [1, ", max, "]"));
      } else {
        refuse(c, Status::kError,
               detail::str("handshake frame length ", len, " is outside [1, ", max,
                           "] (not a c10d TCPStore client of this version?)"),
               "");
      }
      return;
    }
    if (avail < kFrameHeader + len) break;
    std::string why;
    const uint8_t* body = &c.in[c.inBegin + kFrameHeader];
    const bool ok = ready ? handleFrame(c, body, len, &why) : handleHandshake(c, body, len, &why);
    if (!ok) {
      closeConn(c, why);
      return;
    }
    c.inBegin += kFrameHeader + len;
  }
  compact(&c.in, &c.inBegin);
}

bool ServerCore::handleHandshake(Conn& c, const uint8_t* body, size_t n, std::string* why) {
  FrameReader r(body, n);
  uint8_t rawOp = 0;
  r.u8(&rawOp);
  const Op expected = c.phase == Phase::kHello ? Op::kHello : Op::kAuth;
  if (rawOp != static_cast<uint8_t>(expected)) {
    const bool known = rawOp >= 1 && rawOp <= kMaxOp;
    refuse(c, Status::kError,
           detail::str(known ? opName(static_cast<Op>(rawOp)) : "unknown", " request (op ",
                       static_cast<int>(rawOp), ") where the handshake expects ", opName(expected)),
           "");
    return true;
  }
  if (c.phase == Phase::kHello) {
    uint32_t magic = 0, version = 0;
    uint8_t first = 0, hasSecret = 0;
    if (!r.u32(&magic) || !r.u32(&version)) {
      *why = detail::str("malformed hello (", n, "-byte frame)");
      return false;
    }
    if (magic != kMagic || version != kVersion) {
      refuse(c, Status::kError,
             detail::str("bad hello (magic 0x", std::hex, magic, std::dec, ", version ", version,
                         "; expected version ", kVersion,
                         "): not a c10d TCPStore client of this version"),
             detail::str("this TCPStore server speaks protocol version ", kVersion, ", not ",
                         version, " (mixed c10d versions in one job?)"));
      return true;
    }
    if (!r.u8(&first) || !r.u8(&hasSecret) || !r.raw(c.clientNonce.data(), kNonceBytes) ||
        !r.atEnd()) {
      *why = detail::str("malformed hello (", n, "-byte frame)");
      return false;
    }
    if (c.refused) {
      const std::string limit =
          detail::str(numConns_.load() - 1, " other connections are open, at the limit of ",
                      config_.maxConnections, " (maxConnections, C10D_STORE_MAX_CONNECTIONS)");
      refuse(c, Status::kError, limit, "connection refused: " + limit);
      return true;
    }
    const bool serverHasSecret = !config_.secret.empty();
    if (serverHasSecret != (hasSecret != 0)) {
      refuse(c, Status::kAuthFailed,
             detail::str("authentication failed (",
                         serverHasSecret ? "the client has no secret, this server has one"
                                         : "the client has a secret, this server has none",
                         ")"),
             serverHasSecret ? "the server requires a secret and this client has none"
                             : "this client has a secret and the server has none");
      return true;
    }
    c.firstConnect = first != 0;
    FrameWriter w(static_cast<uint8_t>(Status::kOk));
    if (serverHasSecret) {
      c.serverNonce = hooks_.nonce();
      c.phase = Phase::kAuth;
      w.u8(1);
      w.raw(c.serverNonce.data(), kNonceBytes);
      queue(c, w);
    } else {
      w.u8(0);
      queue(c, w);
      completeHandshake(c);
    }
    return true;
  }
  // kAuth: the client's proof, then ours.
  Proof got{};
  if (!r.raw(got.data(), got.size()) || !r.atEnd()) {
    *why = detail::str("malformed auth (", n, "-byte frame)");
    return false;
  }
  const Proof want = makeProof(Role::kClient, config_.secret, c.serverNonce, c.clientNonce);
  if (!proofsEqual(got, want)) {
    refuse(c, Status::kAuthFailed, "authentication failed (wrong proof: a different secret)",
           "the server did not accept this client's proof");
    return true;
  }
  const Proof mine = makeProof(Role::kServer, config_.secret, c.serverNonce, c.clientNonce);
  FrameWriter w(static_cast<uint8_t>(Status::kOk));
  w.raw(mine.data(), mine.size());
  queue(c, w);
  completeHandshake(c);
  return true;
}

void ServerCore::completeHandshake(Conn& c) {
  c.phase = Phase::kReady;
  if (!c.firstConnect) return;
  {
    MutexLock lock(mu_);
    ++workers_;
  }
  workersCv_.notify_all();
}

void ServerCore::refuse(Conn& c, Status status, const std::string& why, const std::string& reply) {
  if (!reply.empty()) replyError(c, status, reply);
  if (c.dead) return;
  logPeer(detail::str(name_, ": refused connection from ", c.peer, ": ", why));
  closeConn(c, "");
}

ServerCore::Clock::time_point ServerCore::expireHandshakes() {
  const auto now = hooks_.clock();
  while (!handshakes_.empty()) {
    const auto [deadline, id] = handshakes_.front();
    Conn* c = find(id);
    if (c != nullptr && c->phase == Phase::kReady) c = nullptr;
    if (c != nullptr && deadline > now) return deadline;
    handshakes_.pop_front();
    if (c != nullptr) {
      refuse(*c, Status::kError,
             detail::str("no handshake within ", config_.handshakeTimeout.count(), " ms (",
                         c->in.size() - c->inBegin, " bytes received)"),
             "");
    }
  }
  return Clock::time_point::max();
}

void ServerCore::queue(Conn& c, FrameWriter& w) {
  if (c.dead) return;
  auto& frame = w.finish();
  if (c.out.size() == c.outBegin) {
    c.out.swap(frame);  // no copy of large values
    c.outBegin = 0;
  } else {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }
  if (!c.outQueued) {
    c.outQueued = true;
    outQueue_.push_back(c.id);
  }
}

void ServerCore::replyError(Conn& c, Status status, const std::string& msg) {
  FrameWriter w(static_cast<uint8_t>(status));
  w.str(msg);
  queue(c, w);
}

void ServerCore::takeOutput(std::vector<uint64_t>* ids) {
  ids->clear();
  ids->swap(outQueue_);
  for (uint64_t id : *ids) {
    if (Conn* c = findAny(id)) c->outQueued = false;
  }
}

void ServerCore::closeConn(Conn& c, const std::string& why) {
  if (c.dead) return;
  if (!why.empty()) logPeer(detail::str(name_, ": closing client ", c.peer, ": ", why));
  unpark(c);
  c.dead = true;
  dead_.push_back(c.id);
}

void ServerCore::logPeer(const std::string& line) {
  const auto now = hooks_.clock();
  if (now - logWindowStart_ >= kLogWindow) {
    if (logSuppressed_ > 0) {
      hooks_.log(detail::str(name_, ": ", logSuppressed_,
                             " more lines about refused or closed connections were suppressed"));
    }
    logWindowStart_ = now;
    logLinesInWindow_ = 0;
    logSuppressed_ = 0;
  }
  if (logLinesInWindow_ < kLogBurst) {
    ++logLinesInWindow_;
    hooks_.log(line);
  } else {
    ++logSuppressed_;
  }
}

void ServerCore::reapDead() {
  for (uint64_t id : dead_) {
    // Closing the fd also removes it from the epoll set.
    if (conns_.erase(id) > 0) --numConns_;
  }
  dead_.clear();
}

void ServerCore::closeAll() {
  numConns_ -= static_cast<int64_t>(conns_.size());
  conns_.clear();
  waiters_.clear();
  woken_.clear();
  outQueue_.clear();
  dead_.clear();
  handshakes_.clear();
}

ServerCore::Conn* ServerCore::find(uint64_t id) {
  Conn* c = findAny(id);
  return c != nullptr && !c->dead ? c : nullptr;
}

ServerCore::Conn* ServerCore::findAny(uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

void ServerCore::waitForWorkers(int n, Milliseconds timeout, uint16_t port) {
  MutexLock lock(mu_);
  if (!lock.waitUntil(workersCv_, net::deadlineAfter(timeout),
                      [&]() C10D_REQUIRES(mu_) { return workers_ >= n; })) {
    C10D_THROW(TimeoutError, "TCPStore server on port ", port, ": only ", workers_, " of ", n,
               " workers connected within the timeout of ", timeout.count(), " ms");
  }
}

int64_t ServerCore::numWorkers() const {
  MutexLock lock(mu_);
  return workers_;
}

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
