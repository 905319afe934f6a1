// TCPStoreServer: executing requests against the key-value map (the loop: tcp_store_server.cc).
#include <algorithm>
#include <charconv>

#include "c10d/error.h"
#include "store/tcp_store_server_loop.h"

namespace c10d {

using tcpstore::FrameReader;
using tcpstore::FrameWriter;
using tcpstore::Op;
using tcpstore::Status;

namespace {

// Smallest encoding of a key (its u32 length) and of a key + value pair.
constexpr size_t kMinKeyBytes = 4;
constexpr size_t kMinPairBytes = 8;

bool readKeys(FrameReader& r, std::vector<std::string>* keys) {
  uint32_t n;
  if (!r.count(&n, kMinKeyBytes)) return false;
  keys->resize(n);
  for (auto& k : *keys) {
    if (!r.str(&k)) return false;
  }
  return true;
}

// Parses a counter value; false when it is not a decimal int64.
bool parseInt64(const std::vector<uint8_t>& v, int64_t* out) {
  const char* begin = reinterpret_cast<const char*>(v.data());
  const char* end = begin + v.size();
  auto res = std::from_chars(begin, end, *out);
  return !v.empty() && res.ec == std::errc() && res.ptr == end;
}

}  // namespace

const char* tcpstore::opName(Op op) {
  switch (op) {
    case Op::kHello:
      return "hello";
    case Op::kSet:
      return "set";
    case Op::kGet:
      return "get";
    case Op::kAdd:
      return "add";
    case Op::kCompareSet:
      return "compareSet";
    case Op::kCheck:
      return "check";
    case Op::kDelete:
      return "deleteKey";
    case Op::kNumKeys:
      return "getNumKeys";
    case Op::kWait:
      return "wait";
    case Op::kAppend:
      return "append";
    case Op::kMultiGet:
      return "multiGet";
    case Op::kMultiSet:
      return "multiSet";
  }
  return "?";
}

bool TCPStoreServer::Loop::handleFrame(Conn& c, const uint8_t* body, size_t n, std::string* why) {
  FrameReader r(body, n);
  uint8_t rawOp = 0;
  r.u8(&rawOp);
  if (rawOp == 0 || rawOp > tcpstore::kMaxOp) {
    *why = detail::str("unknown op ", static_cast<int>(rawOp), " in a ", n, "-byte frame");
    return false;
  }
  const Op op = static_cast<Op>(rawOp);
  std::string key;
  Bytes value;
  Bytes desired;
  std::vector<std::string> keys;
  bool ok = true;
  FrameWriter w(static_cast<uint8_t>(Status::kOk));

  switch (op) {
    case Op::kHello: {
      uint32_t magic = 0, version = 0;
      uint8_t first = 0;
      ok = r.u32(&magic) && r.u32(&version) && r.u8(&first);
      if (ok && (magic != tcpstore::kMagic || version != tcpstore::kVersion)) {
        *why = detail::str("bad hello (magic 0x", std::hex, magic, std::dec, ", version ", version,
                           "; expected version ", tcpstore::kVersion,
                           "): not a c10d TCPStore client of this version");
        return false;
      }
      if (ok && first) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++workers_;
        }
        workersCv_.notify_all();
      }
      break;
    }
    case Op::kSet:
      ok = r.str(&key) && r.bytes(&value);
      if (ok) setKey(key, std::move(value));
      break;
    case Op::kGet:
    case Op::kWait:
    case Op::kMultiGet:
      if (op == Op::kGet) {
        ok = r.str(&key);
        keys.push_back(key);
      } else {
        ok = readKeys(r, &keys);
      }
      if (ok && r.atEnd()) {
        park(c, op, std::move(keys));
        return true;
      }
      break;
    case Op::kAdd: {
      int64_t delta = 0;
      ok = r.str(&key) && r.i64(&delta) && r.atEnd();
      if (!ok) break;
      int64_t current = 0;
      auto it = kv_.find(key);
      if (it != kv_.end() && !parseInt64(it->second, &current)) {
        replyError(c, Status::kInvalidArgument,
                   detail::str("add: key '", key, "' holds a value that is not a decimal int64 (",
                               it->second.size(), " bytes)"));
        return true;
      }
      int64_t next = 0;
      if (__builtin_add_overflow(current, delta, &next)) {
        replyError(c, Status::kInvalidArgument,
                   detail::str("add: key '", key, "' overflows int64: ", current, " + ", delta));
        return true;
      }
      const std::string text = std::to_string(next);
      setKey(key, Bytes(text.begin(), text.end()));
      w.i64(next);
      break;
    }
    case Op::kCompareSet: {
      ok = r.str(&key) && r.bytes(&value) && r.bytes(&desired);
      if (!ok) break;
      auto it = kv_.find(key);
      if ((it == kv_.end() && value.empty()) || (it != kv_.end() && it->second == value)) {
        w.bytes(desired);
        setKey(key, std::move(desired));
      } else {
        w.bytes(it == kv_.end() ? value : it->second);
      }
      break;
    }
    case Op::kCheck: {
      ok = readKeys(r, &keys);
      const bool all = std::all_of(keys.begin(), keys.end(),
                                   [&](const std::string& k) { return kv_.count(k) > 0; });
      w.u8(all ? 1 : 0);
      break;
    }
    case Op::kDelete:
      ok = r.str(&key);
      if (ok) w.u8(kv_.erase(key) > 0 ? 1 : 0);
      break;
    case Op::kNumKeys:
      w.i64(static_cast<int64_t>(kv_.size()));
      break;
    case Op::kAppend:
      ok = r.str(&key) && r.bytes(&value);
      if (ok) {
        auto it = kv_.find(key);
        if (it == kv_.end()) {
          setKey(key, std::move(value));
        } else if (it->second.size() + value.size() > tcpstore::kMaxValueBytes) {
          replyError(c, Status::kInvalidArgument,
                     detail::str("append: key '", key, "' would grow to ",
                                 it->second.size() + value.size(), " bytes, past the limit of ",
                                 tcpstore::kMaxValueBytes, " (a get reply must fit one frame)"));
          return true;
        } else {
          it->second.insert(it->second.end(), value.begin(), value.end());
          wakeWaiters(key);
        }
      }
      break;
    case Op::kMultiSet: {
      uint32_t count = 0;
      ok = r.count(&count, kMinPairBytes);
      for (uint32_t i = 0; ok && i < count; ++i) {
        ok = r.str(&key) && r.bytes(&value);
        if (ok) setKey(key, std::move(value));
      }
      break;
    }
  }
  if (!ok || !r.atEnd()) {
    *why = detail::str("malformed ", tcpstore::opName(op), " request (", n,
                       "-byte frame, fields truncated or trailing bytes)");
    return false;
  }
  reply(c, w);
  return true;
}

void TCPStoreServer::Loop::replyError(Conn& c, Status status, const std::string& msg) {
  FrameWriter w(static_cast<uint8_t>(status));
  w.str(msg);
  reply(c, w);
}

void TCPStoreServer::Loop::setKey(const std::string& key, Bytes value) {
  kv_[key] = std::move(value);
  wakeWaiters(key);
}

void TCPStoreServer::Loop::wakeWaiters(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  waiters_.erase(it);
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (c == nullptr || !c->parked || c->waitingOn != key) continue;
    c->waitingOn.clear();
    // Answered: the main loop resumes any frames the connection queued behind it.
    if (tryCompleteParked(*c)) runnable_.push_back(id);
  }
}

void TCPStoreServer::Loop::park(Conn& c, Op op, std::vector<std::string> keys) {
  c.parked = true;
  c.parkedOp = op;
  c.parkedKeys = std::move(keys);
  tryCompleteParked(c);
}

bool TCPStoreServer::Loop::tryCompleteParked(Conn& c) {
  for (const auto& k : c.parkedKeys) {
    if (kv_.count(k) == 0) {
      c.waitingOn = k;
      waiters_[k].push_back(c.id);
      return false;
    }
  }
  // The reply's body: status byte, the value count (multiGet), then each value with its length.
  // Checked before anything is built: a multiGet naming one large key many times would otherwise
  // build a reply of up to 4 GiB here.
  uint64_t bytes = 1;
  if (c.parkedOp != Op::kWait) {
    if (c.parkedOp == Op::kMultiGet) bytes += 4;
    for (const auto& k : c.parkedKeys) bytes += 4 + kv_[k].size();
  }
  c.parked = false;
  if (bytes > tcpstore::kMaxFrameBytes) {
    c.parkedKeys.clear();
    replyError(c, Status::kInvalidArgument,
               detail::str(tcpstore::opName(c.parkedOp), ": the reply would be ", bytes,
                           " bytes, past the limit of ", tcpstore::kMaxFrameBytes,
                           " bytes per frame (ask for fewer or smaller values at a time)"));
    return true;
  }
  FrameWriter w(static_cast<uint8_t>(Status::kOk), static_cast<size_t>(bytes));
  if (c.parkedOp == Op::kGet) {
    w.bytes(kv_[c.parkedKeys[0]]);
  } else if (c.parkedOp == Op::kMultiGet) {
    w.u32(static_cast<uint32_t>(c.parkedKeys.size()));
    for (const auto& k : c.parkedKeys) w.bytes(kv_[k]);
  }
  c.parkedKeys.clear();
  reply(c, w);
  return true;
}

void TCPStoreServer::Loop::unpark(Conn& c) {
  if (!c.parked) return;
  c.parked = false;
  c.parkedKeys.clear();
  if (c.waitingOn.empty()) return;
  auto it = waiters_.find(c.waitingOn);
  if (it != waiters_.end()) {
    auto& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), c.id), ids.end());
    if (ids.empty()) waiters_.erase(it);
  }
  c.waitingOn.clear();
}

}  // namespace c10d
