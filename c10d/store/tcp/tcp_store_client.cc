#include "c10d/store/tcp/tcp_store_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/tcp/tcp_store_auth.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

enum class Io { kOk, kTimeout, kClosed, kError };

// Waits until fd is ready for `events` or the deadline; false on timeout.
Io waitReady(int fd, short events, net::Clock::time_point deadline, int* err) {
  while (true) {
    pollfd pfd{fd, events, 0};
    int rc = poll(&pfd, 1, net::pollTimeoutUntil(deadline));
    if (rc > 0) return Io::kOk;  // readable, writable, or an error recv/send will report
    if (rc == 0) {
      if (net::Clock::now() >= deadline) return Io::kTimeout;
      continue;
    }
    if (errno != EINTR) {
      *err = errno;
      return Io::kError;
    }
  }
}

Io sendAll(int fd, const uint8_t* p, size_t n, net::Clock::time_point deadline, int* err) {
  while (n > 0) {
    ssize_t rc = ::send(fd, p, n, MSG_NOSIGNAL);
    if (rc > 0) {
      p += rc;
      n -= static_cast<size_t>(rc);
    } else if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Io io = waitReady(fd, POLLOUT, deadline, err);
      if (io != Io::kOk) return io;
    } else if (rc < 0 && errno != EINTR) {
      *err = errno;
      return Io::kError;
    }
  }
  return Io::kOk;
}

Io recvAll(int fd, uint8_t* p, size_t n, net::Clock::time_point deadline, int* err) {
  while (n > 0) {
    ssize_t rc = ::recv(fd, p, n, 0);
    if (rc > 0) {
      p += rc;
      n -= static_cast<size_t>(rc);
    } else if (rc == 0) {
      return Io::kClosed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Io io = waitReady(fd, POLLIN, deadline, err);
      if (io != Io::kOk) return io;
    } else if (errno != EINTR) {
      *err = errno;
      return Io::kError;
    }
  }
  return Io::kOk;
}

// Waits for data, then receives what is there (at most n bytes, at least 1).
Io recvSome(int fd, uint8_t* p, size_t n, net::Clock::time_point deadline, size_t* got, int* err) {
  while (true) {
    Io io = waitReady(fd, POLLIN, deadline, err);
    if (io != Io::kOk) return io;
    ssize_t rc = ::recv(fd, p, n, 0);
    if (rc > 0) {
      *got = static_cast<size_t>(rc);
      return Io::kOk;
    }
    if (rc == 0) return Io::kClosed;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      *err = errno;
      return Io::kError;
    }
  }
}

}  // namespace

void TCPStoreConnection::checkRequestSize(size_t bytes, const std::string& what) {
  if (bytes > tcpstore::kMaxFrameBytes) {
    C10D_THROW(InvalidArgument, "TCPStore ", what, ": request of ", bytes,
               " bytes exceeds the limit of ", tcpstore::kMaxFrameBytes, " bytes per request");
  }
}

void TCPStoreConnection::connect(Milliseconds timeout) {
  MutexLock lock(mu_);
  const auto deadline = net::deadlineAfter(timeout);
  fd_ = net::connectTo(host_, port_, timeout, /*retry=*/true, sourceAddress_);
  handshake(true, deadline, timeout);
}

std::vector<uint8_t> TCPStoreConnection::call(tcpstore::FrameWriter& request,
                                              const std::string& what, Milliseconds timeout) {
  checkRequestSize(request.bodySize(), what);
  const auto& frame = request.finish();
  MutexLock lock(mu_);
  const auto deadline = net::deadlineAfter(timeout);
  ensureConnected(deadline, timeout, what);
  return exchange(frame, what, deadline, timeout);
}

void TCPStoreConnection::ensureConnected(net::Clock::time_point deadline, Milliseconds timeout,
                                         const std::string& what) {
  switch (state_) {
    case State::kUp:
      return;
    case State::kNew:
    case State::kTimedOut: {
      // After a timeout the server is presumably alive: reconnect with the usual retries.
      auto left = std::chrono::duration_cast<Milliseconds>(deadline - net::Clock::now());
      fd_ = net::connectTo(host_, port_, std::max(left, Milliseconds(0)), /*retry=*/true,
                           sourceAddress_);
      handshake(state_ == State::kNew, deadline, timeout);
      return;
    }
    case State::kLost: {
      const std::string reason = lostReason_;
      try {
        fd_ = net::connectTo(host_, port_, timeout, /*retry=*/false, sourceAddress_);
        handshake(false, deadline, timeout);
      } catch (const CommError& e) {
        state_ = State::kLost;
        lostReason_ = reason;
        C10D_THROW(CommError, "connection to TCPStore at ", where(), " lost (", reason,
                   ") and reconnecting for ", what, " failed: ", e.what());
      }
      return;
    }
  }
}

void TCPStoreConnection::handshake(bool first, net::Clock::time_point deadline,
                                   Milliseconds timeout) {
  using tcpstore::FrameReader;
  using tcpstore::FrameWriter;
  const bool hasSecret = !secret_.empty();
  const tcpstore::Nonce clientNonce = tcpstore::randomNonce();
  FrameWriter w(static_cast<uint8_t>(tcpstore::Op::kHello));
  w.u32(tcpstore::kMagic);
  w.u32(tcpstore::kVersion);
  w.u8(first ? 1 : 0);
  w.u8(hasSecret ? 1 : 0);
  w.raw(clientNonce.data(), clientNonce.size());
  state_ = State::kUp;
  std::vector<uint8_t> body = exchange(w.finish(), "hello", deadline, timeout);
  FrameReader r(body.data() + 1, body.size() - 1);
  uint8_t authRequired = 0;
  if (!r.u8(&authRequired)) fail(false, 0, "malformed hello reply", "hello", timeout);
  if (authRequired == 0) {
    if (!r.atEnd()) fail(false, 0, "malformed hello reply", "hello", timeout);
    // A server that does not authenticate cannot prove it is the job's: refuse it.
    if (hasSecret) authFailed("this client has a secret and the server did not ask for it");
    return;
  }
  if (!hasSecret) authFailed("the server requires a secret and this client has none");
  tcpstore::Nonce serverNonce{};
  if (!r.raw(serverNonce.data(), serverNonce.size()) || !r.atEnd()) {
    fail(false, 0, "malformed hello reply", "hello", timeout);
  }
  const tcpstore::Proof proof =
      tcpstore::makeProof(tcpstore::Role::kClient, secret_, serverNonce, clientNonce);
  FrameWriter a(static_cast<uint8_t>(tcpstore::Op::kAuth));
  a.raw(proof.data(), proof.size());
  body = exchange(a.finish(), "authentication", deadline, timeout);
  FrameReader ar(body.data() + 1, body.size() - 1);
  tcpstore::Proof serverProof{};
  if (!ar.raw(serverProof.data(), serverProof.size()) || !ar.atEnd()) {
    fail(false, 0, "malformed authentication reply", "authentication", timeout);
  }
  const tcpstore::Proof expected =
      tcpstore::makeProof(tcpstore::Role::kServer, secret_, serverNonce, clientNonce);
  if (!tcpstore::proofsEqual(serverProof, expected)) {
    authFailed("the server's proof is wrong (it does not know this client's secret)");
  }
}

void TCPStoreConnection::authFailed(const std::string& detail) {
  fd_.reset();
  state_ = State::kLost;
  lostReason_ = "authentication failed";
  C10D_THROW(
      Error, "TCPStore at ", where(),
      ": authentication failed (C10D_STORE_SECRET differs or is unset on one side): ", detail);
}

std::vector<uint8_t> TCPStoreConnection::exchange(const std::vector<uint8_t>& frame,
                                                  const std::string& what,
                                                  net::Clock::time_point deadline,
                                                  Milliseconds timeout) {
  int err = 0;
  Io io = sendAll(fd_.get(), frame.data(), frame.size(), deadline, &err);
  if (io != Io::kOk) fail(io == Io::kTimeout, err, "sending the request failed", what, timeout);
  // One recv usually brings the whole reply; only large values need more.
  uint8_t head[1024];
  size_t have = 0;
  while (have < 4) {
    size_t got = 0;
    io = recvSome(fd_.get(), head + have, sizeof(head) - have, deadline, &got, &err);
    if (io != Io::kOk) {
      fail(io == Io::kTimeout, err, "the server closed the connection", what, timeout);
    }
    have += got;
  }
  const uint32_t len = tcpstore::readFrameLength(head);
  if (len == 0 || have - 4 > len) {
    fail(false, 0, "the server sent a malformed reply frame", what, timeout);
  }
  if (len > tcpstore::kMaxFrameBytes) {
    // Refused before allocating: the server never sends such a frame, so the stream is corrupt.
    const std::string why =
        detail::str("the server sent a reply of ", len, " bytes, past the limit of ",
                    tcpstore::kMaxFrameBytes, " bytes per frame");
    fail(false, 0, why.c_str(), what, timeout);
  }
  std::vector<uint8_t> body(head + 4, head + have);
  if (body.size() < len) {
    const size_t done = body.size();
    body.resize(len);
    io = recvAll(fd_.get(), body.data() + done, len - done, deadline, &err);
    if (io != Io::kOk) {
      fail(io == Io::kTimeout, err, "the server closed the connection mid-reply", what, timeout);
    }
  }
  const auto status = static_cast<tcpstore::Status>(body[0]);
  if (status != tcpstore::Status::kOk) {
    tcpstore::FrameReader r(body.data() + 1, body.size() - 1);
    std::string msg;
    if (!r.str(&msg)) msg = "(unreadable error message)";
    if (status == tcpstore::Status::kAuthFailed) authFailed(msg);
    if (what == "hello" || what == "authentication") {
      // Refused at the handshake (a server limit, another protocol version): the server closes.
      fd_.reset();
      state_ = State::kLost;
      lostReason_ = msg;
    }
    if (status == tcpstore::Status::kInvalidArgument) {
      C10D_THROW(InvalidArgument, "TCPStore at ", where(), ": ", msg);
    }
    C10D_THROW(Error, "TCPStore at ", where(), ": ", msg);
  }
  return body;
}

void TCPStoreConnection::fail(bool timedOut, int err, const char* detail, const std::string& what,
                              Milliseconds timeout) {
  fd_.reset();
  if (timedOut) {
    state_ = State::kTimedOut;
    C10D_THROW(TimeoutError, "TCPStore ", what, " timed out after ", timeout.count(),
               " ms (TCPStore at ", where(), ")");
  }
  state_ = State::kLost;
  lostReason_ = err != 0 ? net::describeErrno(err) : std::string(detail);
  C10D_THROW(CommError, "connection to TCPStore at ", where(), " lost: ", lostReason_, " (during ",
             what, ")");
}

C10D_NAMESPACE_END
}  // namespace c10d
