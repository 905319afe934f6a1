// TCPStore wire protocol (internal to store/; shared by the server, the client and the fuzzers).
//
// Every message, request or reply, is one frame:
//   u32 length            bytes that follow (at most kMaxFrameBytes)
//   u8  op | status       request: an Op; reply: a Status
//   ...                   fields: u8, u32, i64 (all little-endian), byte strings (u32 n + n bytes)
//                         and fixed-size raw fields (nonces, proofs)
//
// Handshake (every connection, before any other request; frames of at most
// kMaxHandshakeFrameBytes):
//   kHello  u32 magic, u32 version, u8 firstConnect, u8 hasSecret, raw[32] client nonce
//           -> ok: u8 authRequired (+ raw[32] server nonce when 1)
//           -> kAuthFailed: which side lacks a secret, when exactly one has one (the server
//              closes; the client reports "authentication failed (...): <message>")
//           -> kError: message, when the server refuses the connection (a limit; it closes)
//   kAuth   raw[32] client proof  (only after an ok with authRequired = 1)
//           -> ok: raw[32] server proof   | kAuthFailed: message (the server closes)
// Proofs are HMAC-SHA256 over the two nonces (tcp_store_auth.h): the client proves first, so a
// server never hands a keyed hash to a peer that has not shown it knows the secret; the client
// then checks the server's proof (mutual authentication). Without a secret on either side the
// handshake is the one round trip of kHello. A connection that has not finished its handshake
// within the server's handshake timeout is closed.
//
// Requests (after the handshake):
//   kSet        key, value                               -> ok
//   kGet        key                                      -> value (sent once the key exists)
//   kAdd        key, i64 delta                           -> i64 new value
//   kCompareSet key, expected, desired                   -> value
//   kCheck      u32 n, n keys                            -> u8 all present
//   kDelete     key                                      -> u8 existed
//   kNumKeys                                             -> i64 count
//   kWait       u32 n, n keys                            -> ok (sent once every key exists)
//   kAppend     key, value                               -> ok
//   kMultiGet   u32 n, n keys                            -> u32 n, n values (once all exist)
//   kMultiSet   u32 n, n x (key, value)                  -> ok
// An error reply carries status kInvalidArgument or kError and a message string; a get / multiGet
// whose reply would exceed kMaxFrameBytes, and a request that a server limit refuses (keys, value
// bytes, bytes per client, total bytes), are answered with kInvalidArgument naming the limit.
// A client has at most one request in flight; the server answers requests of one connection in
// order. Anything malformed closes that connection.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {

constexpr uint32_t kMagic = 0x31534354;  // "TCS1"
// 2: the handshake carries nonces and the optional HMAC challenge-response.
constexpr uint32_t kVersion = 2;
// Frames before the handshake completes are tiny; a longer one is refused unread, so a peer that
// has not authenticated cannot make the server buffer more than this.
constexpr uint32_t kMaxHandshakeFrameBytes = 128;
constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;  // HMAC-SHA256
// Values up to 64 MiB, plus slack for keys and headers. Bounds requests and replies alike: a
// sender never builds a longer frame, a receiver refuses one.
constexpr uint32_t kMaxFrameBytes = (64u << 20) + (1u << 20);
// The largest value a get reply (status byte + u32 length + value) carries in one frame.
constexpr uint32_t kMaxValueBytes = kMaxFrameBytes - 5;

enum class Op : uint8_t {
  kHello = 1,
  kSet,
  kGet,
  kAdd,
  kCompareSet,
  kCheck,
  kDelete,
  kNumKeys,
  kWait,
  kAppend,
  kMultiGet,
  kMultiSet,
  kAuth,
};
constexpr uint8_t kMaxOp = static_cast<uint8_t>(Op::kAuth);

enum class Status : uint8_t { kOk = 0, kInvalidArgument = 1, kError = 2, kAuthFailed = 3 };

const char* opName(Op op);

// Builds one frame: the length prefix is patched in by finish().
class FrameWriter {
 public:
  explicit FrameWriter(uint8_t tag, size_t reserve = 64) {
    buf_.reserve(reserve + 5);
    buf_.resize(4);
    u8(tag);
  }
  void u8(uint8_t v) { buf_.push_back(v); }
  void u32(uint32_t v) { putLE(v, 4); }
  void i64(int64_t v) { putLE(static_cast<uint64_t>(v), 8); }
  void bytes(const void* data, size_t n) {
    u32(static_cast<uint32_t>(n));
    const auto* p = static_cast<const uint8_t*>(data);
    buf_.insert(buf_.end(), p, p + n);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  // A fixed-size field: no length prefix.
  void raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    buf_.insert(buf_.end(), p, p + n);
  }
  void bytes(const std::vector<uint8_t>& b) { bytes(b.data(), b.size()); }
  // Size of the body so far (what the length prefix will say).
  size_t bodySize() const { return buf_.size() - 4; }
  std::vector<uint8_t>& finish() {
    const uint64_t n = bodySize();
    for (int i = 0; i < 4; ++i) buf_[i] = static_cast<uint8_t>(n >> (8 * i));
    return buf_;
  }

 private:
  void putLE(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> buf_;
};

// Parses a frame body; every getter fails (returns false) instead of reading past the end.
class FrameReader {
 public:
  FrameReader(const uint8_t* data, size_t n) : p_(data), end_(data + n) {}
  bool u8(uint8_t* v) {
    if (left() < 1) return false;
    *v = *p_++;
    return true;
  }
  bool u32(uint32_t* v) {
    uint64_t x;
    if (!getLE(&x, 4)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool i64(int64_t* v) {
    uint64_t x;
    if (!getLE(&x, 8)) return false;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool str(std::string* s) {
    const uint8_t* p;
    uint32_t n;
    if (!span(&p, &n)) return false;
    s->assign(reinterpret_cast<const char*>(p), n);
    return true;
  }
  bool bytes(std::vector<uint8_t>* b) {
    const uint8_t* p;
    uint32_t n;
    if (!span(&p, &n)) return false;
    b->assign(p, p + n);
    return true;
  }
  // A fixed-size field of n bytes.
  bool raw(void* out, size_t n) {
    if (left() < n) return false;
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  // A count of items that each need at least `minItemBytes`: rejects counts the frame cannot hold.
  bool count(uint32_t* n, size_t minItemBytes) {
    return u32(n) && static_cast<uint64_t>(*n) * minItemBytes <= left();
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool atEnd() const { return p_ == end_; }

 private:
  bool span(const uint8_t** p, uint32_t* n) {
    if (!u32(n) || left() < *n) return false;
    *p = p_;
    p_ += *n;
    return true;
  }
  bool getLE(uint64_t* v, int n) {
    if (left() < static_cast<size_t>(n)) return false;
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) x |= static_cast<uint64_t>(p_[i]) << (8 * i);
    p_ += n;
    *v = x;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

// Reads the u32 length prefix at p (4 bytes available).
inline uint32_t readFrameLength(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
