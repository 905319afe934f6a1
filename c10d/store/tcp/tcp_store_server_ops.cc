// ServerCore: executing requests against the key-value map, with the limits (framing and the
// handshake: tcp_store_server_core.cc).
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/tcp/tcp_store_server_core.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {

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

// The bytes a key holding `valueBytes` is charged.
uint64_t charge(const std::string& key, uint64_t valueBytes) {
  return key.size() + valueBytes;
}

}  // namespace

const char* opName(Op op) {
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
    case Op::kAuth:
      return "auth";
  }
  return "?";
}

bool ServerCore::handleFrame(Conn& c, const uint8_t* body, size_t n, std::string* why) {
  FrameReader r(body, n);
  uint8_t rawOp = 0;
  r.u8(&rawOp);
  if (rawOp == 0 || rawOp > kMaxOp || rawOp == static_cast<uint8_t>(Op::kHello) ||
      rawOp == static_cast<uint8_t>(Op::kAuth)) {
    *why = rawOp == 0 || rawOp > kMaxOp
               ? detail::str("unknown op ", static_cast<int>(rawOp), " in a ", n, "-byte frame")
               : detail::str("a second ", opName(static_cast<Op>(rawOp)), " after the handshake");
    return false;
  }
  const Op op = static_cast<Op>(rawOp);
  std::string key;
  Bytes value;
  Bytes desired;
  std::vector<std::string> keys;
  bool ok = true;
  std::string err;
  FrameWriter w(static_cast<uint8_t>(Status::kOk));

  switch (op) {
    case Op::kHello:
    case Op::kAuth:
      break;  // refused above
    case Op::kSet:
      ok = r.str(&key) && r.bytes(&value) && r.atEnd();
      if (!ok) break;
      if (!admit(c, "set", {{&key, value.size()}}, &err)) {
        replyError(c, Status::kInvalidArgument, err);
        return true;
      }
      store(c, key, std::move(value));
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
      if (it != kv_.end() && !parseInt64(it->second.value, &current)) {
        replyError(c, Status::kInvalidArgument,
                   detail::str("add: key '", key, "' holds a value that is not a decimal int64 (",
                               it->second.value.size(), " bytes)"));
        return true;
      }
      int64_t next = 0;
      if (__builtin_add_overflow(current, delta, &next)) {
        replyError(c, Status::kInvalidArgument,
                   detail::str("add: key '", key, "' overflows int64: ", current, " + ", delta));
        return true;
      }
      const std::string text = std::to_string(next);
      if (!admit(c, "add", {{&key, text.size()}}, &err)) {
        replyError(c, Status::kInvalidArgument, err);
        return true;
      }
      store(c, key, Bytes(text.begin(), text.end()));
      w.i64(next);
      break;
    }
    case Op::kCompareSet: {
      ok = r.str(&key) && r.bytes(&value) && r.bytes(&desired) && r.atEnd();
      if (!ok) break;
      auto it = kv_.find(key);
      if ((it == kv_.end() && value.empty()) || (it != kv_.end() && it->second.value == value)) {
        if (!admit(c, "compareSet", {{&key, desired.size()}}, &err)) {
          replyError(c, Status::kInvalidArgument, err);
          return true;
        }
        w.bytes(desired);
        store(c, key, std::move(desired));
      } else {
        w.bytes(it == kv_.end() ? value : it->second.value);
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
      ok = r.str(&key) && r.atEnd();
      if (ok) w.u8(eraseKey(key) ? 1 : 0);
      break;
    case Op::kNumKeys:
      w.i64(static_cast<int64_t>(kv_.size()));
      break;
    case Op::kAppend: {
      ok = r.str(&key) && r.bytes(&value) && r.atEnd();
      if (!ok) break;
      auto it = kv_.find(key);
      const uint64_t before = it == kv_.end() ? 0 : it->second.value.size();
      if (!admit(c, "append", {{&key, before + value.size()}}, &err)) {
        replyError(c, Status::kInvalidArgument, err);
        return true;
      }
      if (it == kv_.end()) {
        store(c, key, std::move(value));
      } else {
        // In place (no copy of a large value); the whole key is now charged to this client.
        release(key, it->second);
        it->second.value.insert(it->second.value.end(), value.begin(), value.end());
        chargeTo(c, key, it->second);
      }
      break;
    }
    case Op::kMultiSet: {
      uint32_t count = 0;
      ok = r.count(&count, kMinPairBytes);
      std::vector<Bytes> values;
      for (uint32_t i = 0; ok && i < count; ++i) {
        ok = r.str(&key) && r.bytes(&value);
        if (!ok) break;
        keys.push_back(std::move(key));
        values.push_back(std::move(value));
      }
      if (!ok || !r.atEnd()) break;
      std::vector<Change> changes;
      changes.reserve(keys.size());
      for (size_t i = 0; i < keys.size(); ++i) changes.push_back({&keys[i], values[i].size()});
      if (!admit(c, "multiSet", changes, &err)) {
        replyError(c, Status::kInvalidArgument, err);
        return true;
      }
      for (size_t i = 0; i < keys.size(); ++i) store(c, keys[i], std::move(values[i]));
      break;
    }
  }
  if (!ok || !r.atEnd()) {
    *why = detail::str("malformed ", opName(op), " request (", n,
                       "-byte frame, fields truncated or trailing bytes)");
    return false;
  }
  queue(c, w);
  return true;
}

bool ServerCore::admit(const Conn& c, const char* op, const std::vector<Change>& changes,
                       std::string* err) {
  int64_t keys = static_cast<int64_t>(kv_.size());
  auto mineIt = clientBytes_.find(c.id);
  uint64_t mine = mineIt == clientBytes_.end() ? 0 : mineIt->second;
  uint64_t total = totalBytes_;
  // What earlier changes of the same request did to a key (a multiSet may name a key twice).
  std::unordered_map<std::string, uint64_t> batch;
  for (const Change& ch : changes) {
    const std::string& key = *ch.key;
    auto what = [&] { return detail::str(op, " of key '", key, "'"); };
    if (ch.valueBytes > static_cast<uint64_t>(config_.maxValueBytes)) {
      *err = detail::str(what(), ": a value of ", ch.valueBytes, " bytes exceeds the limit of ",
                         config_.maxValueBytes,
                         " bytes per value (maxValueBytes, C10D_STORE_MAX_VALUE_BYTES)");
      return false;
    }
    bool exists = false;
    uint64_t oldCharge = 0;
    bool oldMine = false;
    if (auto b = batch.find(key); b != batch.end()) {
      exists = true;
      oldCharge = b->second;
      oldMine = true;
    } else if (auto it = kv_.find(key); it != kv_.end()) {
      exists = true;
      oldCharge = charge(key, it->second.value.size());
      oldMine = it->second.owner == c.id;
    }
    if (!exists && ++keys > config_.maxKeys) {
      *err = detail::str(what(), ": the store holds ", keys - 1, " keys, at the limit of ",
                         config_.maxKeys, " (maxKeys, C10D_STORE_MAX_KEYS)");
      return false;
    }
    const uint64_t newCharge = charge(key, ch.valueBytes);
    total = total - oldCharge + newCharge;
    mine = mine - (oldMine ? oldCharge : 0) + newCharge;
    if (mine > static_cast<uint64_t>(config_.maxClientBytes)) {
      *err = detail::str(what(), " (", newCharge, " bytes with the key): this client would hold ",
                         mine, " bytes, past the limit of ", config_.maxClientBytes,
                         " bytes per client (maxClientBytes, C10D_STORE_MAX_CLIENT_BYTES)");
      return false;
    }
    if (total > static_cast<uint64_t>(config_.maxTotalBytes)) {
      *err = detail::str(what(), " (", newCharge, " bytes with the key): the store would hold ",
                         total, " bytes, past the limit of ", config_.maxTotalBytes,
                         " bytes in all (maxTotalBytes, C10D_STORE_MAX_TOTAL_BYTES)");
      return false;
    }
    batch[key] = newCharge;
  }
  return true;
}

void ServerCore::release(const std::string& key, const Entry& e) {
  const uint64_t bytes = charge(key, e.value.size());
  totalBytes_ -= bytes;
  auto it = clientBytes_.find(e.owner);
  if (it == clientBytes_.end()) return;
  it->second -= bytes;
  if (it->second == 0) clientBytes_.erase(it);
}

void ServerCore::chargeTo(const Conn& c, const std::string& key, Entry& e) {
  const uint64_t bytes = charge(key, e.value.size());
  e.owner = c.id;
  totalBytes_ += bytes;
  clientBytes_[c.id] += bytes;
}

void ServerCore::store(const Conn& c, const std::string& key, Bytes value) {
  auto [it, inserted] = kv_.try_emplace(key);
  if (!inserted) release(key, it->second);
  it->second.value = std::move(value);
  chargeTo(c, key, it->second);
  wakeWaiters(key);
}

bool ServerCore::eraseKey(const std::string& key) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return false;
  release(key, it->second);
  kv_.erase(it);
  return true;
}

void ServerCore::wakeWaiters(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  waiters_.erase(it);
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (c == nullptr || !c->parked || c->waitingOn != key) continue;
    c->waitingOn.clear();
    // Answered: the loop resumes any frames the connection queued behind it.
    if (tryCompleteParked(*c)) woken_.push_back(id);
  }
}

void ServerCore::park(Conn& c, Op op, std::vector<std::string> keys) {
  c.parked = true;
  c.parkedOp = op;
  c.parkedKeys = std::move(keys);
  tryCompleteParked(c);
}

bool ServerCore::tryCompleteParked(Conn& c) {
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
    for (const auto& k : c.parkedKeys) bytes += 4 + kv_.at(k).value.size();
  }
  c.parked = false;
  if (bytes > kMaxFrameBytes) {
    c.parkedKeys.clear();
    replyError(c, Status::kInvalidArgument,
               detail::str(opName(c.parkedOp), ": the reply would be ", bytes,
                           " bytes, past the limit of ", kMaxFrameBytes,
                           " bytes per frame (ask for fewer or smaller values at a time)"));
    return true;
  }
  FrameWriter w(static_cast<uint8_t>(Status::kOk), static_cast<size_t>(bytes));
  if (c.parkedOp == Op::kGet) {
    w.bytes(kv_.at(c.parkedKeys[0]).value);
  } else if (c.parkedOp == Op::kMultiGet) {
    w.u32(static_cast<uint32_t>(c.parkedKeys.size()));
    for (const auto& k : c.parkedKeys) w.bytes(kv_.at(k).value);
  }
  c.parkedKeys.clear();
  queue(c, w);
  return true;
}

void ServerCore::unpark(Conn& c) {
  if (!c.parked) return;
  c.parked = false;
  c.parkedKeys.clear();
  // A parked connection is always in its key's waiter list (tryCompleteParked), "" included.
  auto it = waiters_.find(c.waitingOn);
  if (it != waiters_.end()) {
    auto& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), c.id), ids.end());
    if (ids.empty()) waiters_.erase(it);
  }
  c.waitingOn.clear();
}

std::string ServerCore::checkInvariants() const {
  uint64_t total = 0;
  std::unordered_map<uint64_t, uint64_t> byClient;
  for (const auto& [key, e] : kv_) {
    total += charge(key, e.value.size());
    byClient[e.owner] += charge(key, e.value.size());
  }
  if (total != totalBytes_) return detail::str("total bytes ", totalBytes_, " != ", total);
  if (byClient.size() != clientBytes_.size()) {
    return detail::str(clientBytes_.size(), " clients charged, ", byClient.size(), " own keys");
  }
  for (const auto& [id, bytes] : clientBytes_) {
    auto it = byClient.find(id);
    if (it == byClient.end() || it->second != bytes) {
      return detail::str("client ", id, " charged ", bytes, " bytes");
    }
  }
  if (static_cast<int64_t>(conns_.size()) != numConns_.load()) return "connection count";
  std::unordered_set<uint64_t> listed;  // each at most once, in the list of its waitingOn
  for (const auto& [key, ids] : waiters_) {
    if (kv_.count(key) != 0) return detail::str("waiters on existing key '", key, "'");
    for (uint64_t id : ids) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->dead || !it->second->parked ||
          it->second->waitingOn != key || !listed.insert(id).second) {
        return detail::str("stale waiter ", id, " on key '", key, "'");
      }
    }
  }
  for (const auto& [id, c] : conns_) {
    if (c->dead) continue;
    if (c->phase != Phase::kReady && c->parked) return "parked before the handshake";
    if (c->parked && listed.count(id) == 0)
      return detail::str("connection ", id, " parked on no key");
  }
  return "";
}

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
