// Helpers shared by the TCPStore tests: expected exceptions, scoped environment variables, and a
// raw protocol client (to send what a real client never would).
#pragma once

#include <fcntl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/socket.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// The exception's message when fn throws Exc; a test failure (and "") otherwise.
template <typename Exc, typename Fn>
std::string expectThrows(Fn&& fn) {
  try {
    fn();
  } catch (const Exc& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

// Sets (or, with nullptr, unsets) an environment variable for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

inline TCPStoreOptions clientOptions(uint16_t port, Milliseconds timeout = Milliseconds(30000)) {
  TCPStoreOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = timeout;
  return o;
}

// A hand-driven protocol client on a blocking socket: frames in, frames out, 10 s deadlines.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : fd_(net::connectTo("127.0.0.1", port, Milliseconds(5000))) {
    const int flags = fcntl(fd_.get(), F_GETFL, 0);
    fcntl(fd_.get(), F_SETFL, flags & ~O_NONBLOCK);
    timeval tv{10, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  // Sends raw bytes (a short send because the server closed is not an error here).
  void sendBytes(const std::vector<uint8_t>& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        std::this_thread::sleep_for(Milliseconds(1));
        continue;
      }
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  void send(tcpstore::FrameWriter& w) { sendBytes(w.finish()); }

  // The next reply body (status byte first); empty when the server closed the connection.
  std::vector<uint8_t> receive() {
    uint8_t head[4];
    if (!recvExactly(head, 4)) return {};
    std::vector<uint8_t> body(tcpstore::readFrameLength(head));
    if (!recvExactly(body.data(), body.size())) return {};
    return body;
  }

  // True when the server closes the connection (EOF or reset) within `timeout`, reading and
  // dropping anything it sends first.
  bool closedWithin(Milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint8_t buf[256];
    while (std::chrono::steady_clock::now() < deadline) {
      ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
      if (n < 0) std::this_thread::sleep_for(Milliseconds(2));
    }
    return false;
  }

  // The hello of this protocol version, with `nonce` and whether this client claims a secret.
  static tcpstore::FrameWriter hello(bool hasSecret, const tcpstore::Nonce& nonce,
                                     uint32_t version = tcpstore::kVersion) {
    tcpstore::FrameWriter w(static_cast<uint8_t>(tcpstore::Op::kHello));
    w.u32(tcpstore::kMagic);
    w.u32(version);
    w.u8(0);
    w.u8(hasSecret ? 1 : 0);
    w.raw(nonce.data(), nonce.size());
    return w;
  }

  // Runs the handshake without a secret; true when the server accepted it.
  bool handshakeWithoutSecret() {
    tcpstore::Nonce nonce{};
    auto h = hello(false, nonce);
    send(h);
    const auto reply = receive();
    return reply.size() == 2 && reply[0] == 0 && reply[1] == 0;
  }

  std::string self() const {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    return net::formatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  }

 private:
  bool recvExactly(uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t k = ::recv(fd_.get(), p, n, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      p += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  }
  net::Fd fd_;
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
