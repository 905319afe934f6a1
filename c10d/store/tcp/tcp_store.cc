// TCPStore: the Store API over a TCPStoreConnection (wire format: tcp_store_protocol.h).
#include "c10d/store/tcp/tcp_store.h"

#include <mutex>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/store_util.h"
#include "c10d/store/tcp/tcp_store_client.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using tcpstore::FrameReader;
using tcpstore::FrameWriter;
using tcpstore::Op;

namespace {

std::string describeKey(const char* op, const std::string& key) {
  return detail::str(op, " of key '", key, "'");
}

std::string describeKeys(const char* op, const std::vector<std::string>& keys) {
  return detail::str(op, " of keys ", storeutil::describeKeys(keys));
}

FrameWriter request(Op op, size_t reserve = 64) {
  return FrameWriter(static_cast<uint8_t>(op), reserve);
}

void putKeys(FrameWriter& w, const std::vector<std::string>& keys) {
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
}

// A reply body (status byte first) that must parse completely; anything else is a server bug.
class Reply {
 public:
  Reply(std::vector<uint8_t> body, const std::string& what)
      : body_(std::move(body)), r_(body_.data() + 1, body_.size() - 1), what_(what) {}
  Reply(const Reply&) = delete;  // r_ points into body_
  Reply& operator=(const Reply&) = delete;
  Bytes bytes() {
    Bytes b;
    check(r_.bytes(&b));
    return b;
  }
  int64_t i64() {
    int64_t v = 0;
    check(r_.i64(&v));
    return v;
  }
  bool flag() {
    uint8_t v = 0;
    check(r_.u8(&v));
    return v != 0;
  }
  // The last field as bytes, moved out of the reply without copying the value.
  Bytes lastBytes() {
    uint32_t n = 0;
    check(r_.u32(&n) && r_.left() == n);
    body_.erase(body_.begin(), body_.end() - n);
    return std::move(body_);
  }
  uint32_t u32() {
    uint32_t v = 0;
    check(r_.u32(&v));
    return v;
  }

 private:
  void check(bool ok) { C10D_CHECK(ok, "TCPStore ", what_, ": malformed reply from the server"); }
  std::vector<uint8_t> body_;
  FrameReader r_;
  std::string what_;
};

}  // namespace

struct TCPStore::Impl {
  TCPStoreOptions options;
  uint16_t port = 0;
  std::unique_ptr<TCPStoreServer> server;  // destroyed after the connection below
  std::unique_ptr<TCPStoreConnection> conn;
  Mutex timeoutMu;
  // Mirrors Store::timeout_ for use from any thread.
  Milliseconds timeout C10D_GUARDED_BY(timeoutMu);

  Milliseconds currentTimeout() C10D_EXCLUDES(timeoutMu) {
    MutexLock lock(timeoutMu);
    return timeout;
  }
  Reply call(FrameWriter& w, const std::string& what, Milliseconds t = kUnsetTimeout) {
    return Reply(conn->call(w, what, t == kUnsetTimeout ? currentTimeout() : t), what);
  }
};

TCPStore::TCPStore(TCPStoreOptions options)
    : Store(options.timeout), impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->timeout = impl_->options.timeout;
  const auto& opts = impl_->options;
  impl_->port = opts.port;
  const std::string secret = tcpstore::resolveSecret(opts.secret);
  if (opts.isServer) {
    TCPStoreServerOptions so;
    so.bindAddress = opts.bindAddress;
    so.port = opts.port;
    so.secret = secret;
    so.limits = opts.limits;
    so.handshakeTimeout = opts.handshakeTimeout;
    impl_->server = std::make_unique<TCPStoreServer>(so);
    impl_->port = impl_->server->port();
  }
  impl_->conn =
      std::make_unique<TCPStoreConnection>(opts.host, impl_->port, secret, opts.sourceAddress);
  impl_->conn->connect(opts.timeout);
  if (impl_->server && opts.waitForWorkers && opts.numWorkers > 0) {
    impl_->server->waitForWorkers(opts.numWorkers, opts.timeout);
  }
}

TCPStore::~TCPStore() = default;

void TCPStore::set(const std::string& key, const Bytes& value) {
  TCPStoreConnection::checkRequestSize(key.size() + value.size(), describeKey("set", key));
  FrameWriter w = request(Op::kSet, key.size() + value.size() + 16);
  w.str(key);
  w.bytes(value);
  impl_->call(w, describeKey("set", key));
}

Bytes TCPStore::get(const std::string& key) {
  FrameWriter w = request(Op::kGet, key.size() + 8);
  w.str(key);
  return impl_->call(w, describeKey("get", key)).lastBytes();
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  FrameWriter w = request(Op::kAdd, key.size() + 16);
  w.str(key);
  w.i64(delta);
  return impl_->call(w, describeKey("add", key)).i64();
}

Bytes TCPStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  TCPStoreConnection::checkRequestSize(key.size() + expected.size() + desired.size(),
                                       describeKey("compareSet", key));
  FrameWriter w = request(Op::kCompareSet, key.size() + expected.size() + desired.size() + 16);
  w.str(key);
  w.bytes(expected);
  w.bytes(desired);
  return impl_->call(w, describeKey("compareSet", key)).bytes();
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  FrameWriter w = request(Op::kCheck);
  putKeys(w, keys);
  return impl_->call(w, describeKeys("check", keys)).flag();
}

bool TCPStore::deleteKey(const std::string& key) {
  FrameWriter w = request(Op::kDelete, key.size() + 8);
  w.str(key);
  return impl_->call(w, describeKey("deleteKey", key)).flag();
}

int64_t TCPStore::getNumKeys() {
  FrameWriter w = request(Op::kNumKeys);
  return impl_->call(w, "getNumKeys").i64();
}

void TCPStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  // A zero timeout cannot cover a round trip: it means "are they all there now?".
  if (timeout.count() == 0) {
    if (check(keys)) return;
    C10D_THROW(TimeoutError, describeKeys("wait", keys), ": keys not present (timeout 0 ms)");
  }
  FrameWriter w = request(Op::kWait);
  putKeys(w, keys);
  impl_->call(w, describeKeys("wait", keys), timeout);
}

void TCPStore::append(const std::string& key, const Bytes& value) {
  TCPStoreConnection::checkRequestSize(key.size() + value.size(), describeKey("append", key));
  FrameWriter w = request(Op::kAppend, key.size() + value.size() + 16);
  w.str(key);
  w.bytes(value);
  impl_->call(w, describeKey("append", key));
}

std::vector<Bytes> TCPStore::multiGet(const std::vector<std::string>& keys) {
  FrameWriter w = request(Op::kMultiGet);
  putKeys(w, keys);
  const std::string what = describeKeys("multiGet", keys);
  Reply reply = impl_->call(w, what);
  const uint32_t n = reply.u32();
  C10D_CHECK_EQ(n, keys.size(), "TCPStore ", what, ": wrong number of values in the reply");
  std::vector<Bytes> values;
  values.reserve(n);
  for (uint32_t i = 0; i < n; ++i) values.push_back(reply.bytes());
  return values;
}

void TCPStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  C10D_CHECK_ARG(keys.size() == values.size(), "TCPStore multiSet: ", keys.size(), " keys but ",
                 values.size(), " values");
  size_t bytes = 16;
  for (size_t i = 0; i < keys.size(); ++i) bytes += 8 + keys[i].size() + values[i].size();
  TCPStoreConnection::checkRequestSize(bytes, describeKeys("multiSet", keys));
  FrameWriter w = request(Op::kMultiSet, bytes);
  w.u32(static_cast<uint32_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) {
    w.str(keys[i]);
    w.bytes(values[i]);
  }
  impl_->call(w, describeKeys("multiSet", keys));
}

void TCPStore::setTimeout(Milliseconds timeout) {
  MutexLock lock(impl_->timeoutMu);
  impl_->timeout = timeout;
  Store::setTimeout(timeout);
}

uint16_t TCPStore::port() const {
  return impl_->port;
}

const std::string& TCPStore::host() const {
  return impl_->options.host;
}

TCPStoreServer* TCPStore::server() const {
  return impl_->server.get();
}

C10D_NAMESPACE_END
}  // namespace c10d
