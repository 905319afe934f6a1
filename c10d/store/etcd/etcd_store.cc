#include "c10d/store/etcd/etcd_store.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"
#include "c10d/store/etcd/etcd_reply.h"
#include "c10d/store/store_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using etcd::base64Encode;
using etcd::EtcdError;
using etcd::Json;
using etcd::jsonInt;
using etcd::txnSucceeded;

namespace {

using Clock = std::chrono::steady_clock;
using storeutil::deadlineAfter;
using storeutil::describeKeys;
using storeutil::remaining;

// etcd's default --max-txn-ops.
constexpr size_t kMaxTxnOps = 128;

[[noreturn]] void badUrl(const std::string& url, const std::string& problem) {
  C10D_THROW(InvalidArgument, "etcd store URL '", url, "': ", problem,
             " (expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX][?ttl=SECONDS])");
}

// The smallest key greater than every key starting with `prefix` (etcd's range_end).
std::string prefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(prefix.back());
    if (last < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

// Spreads the retries of contending read-modify-writes (exponential backoff, full jitter): none
// for the first retry, then a random pause in [0, 2^attempt ms), at most 1 s. Every attempt,
// failed or not, is a Raft round in etcd (a transaction that may write is never read-only), so
// N clients retrying at once would saturate it; the window grows until about one of them tries
// per commit, which for 1,000 contenders at ~1 ms a commit is about a second.
void backoff(int attempt) {
  if (attempt < 1) return;
  thread_local std::minstd_rand rng(std::random_device{}());
  const uint32_t windowUs = 1000u << std::min(attempt, 10);
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % windowUs));
}

Json putOp(const std::string& key, const std::string& value, int64_t lease) {
  Json put{{"key", base64Encode(key)}, {"value", base64Encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return put;
}

}  // namespace

EtcdStoreOptions parseEtcdUrl(const std::string& url) {
  const std::string scheme = "etcd://";
  if (url.compare(0, scheme.size(), scheme) != 0) badUrl(url, "does not start with etcd://");
  std::string rest = url.substr(scheme.size());
  EtcdStoreOptions o;
  const size_t q = rest.find('?');
  if (q != std::string::npos) {
    std::stringstream query(rest.substr(q + 1));
    rest = rest.substr(0, q);
    std::string item;
    while (std::getline(query, item, '&')) {
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string k = item.substr(0, eq);
      const std::string v = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (k != "ttl") badUrl(url, "unknown query key '" + k + "' (known: ttl)");
      long long ttl = 0;
      if (!parseInteger(v, 0, 365LL * 24 * 3600, &ttl)) {
        badUrl(url, "ttl='" + v + "' is not a number of seconds in [0, 31536000]");
      }
      o.leaseTtlSeconds = static_cast<int>(ttl);
    }
  }
  const size_t slash = rest.find('/');
  std::string hosts = rest.substr(0, slash);
  if (slash != std::string::npos) {
    std::string prefix = rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (prefix.empty()) badUrl(url, "empty prefix after '/'");
    o.prefix = prefix;
  }
  o.endpoints.clear();
  for (size_t pos = 0; pos <= hosts.size();) {
    size_t comma = hosts.find(',', pos);
    if (comma == std::string::npos) comma = hosts.size();
    const std::string hp = hosts.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t colon = hp.rfind(':');
    if (hp.empty() || colon == std::string::npos || colon == 0) {
      badUrl(url, "endpoint '" + hp + "' is not HOST:PORT");
    }
    const std::string port = hp.substr(colon + 1);
    long long p = 0;
    if (!parseInteger(port, 1, 65535, &p)) {
      badUrl(url, "port '" + port + "' of endpoint '" + hp + "' is not in [1, 65535]");
    }
    o.endpoints.push_back(hp);
  }
  if (o.endpoints.empty()) badUrl(url, "no endpoint");
  return o;
}

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : Store(options.timeout),
      options_(std::move(options)),
      root_("/" + options_.prefix),
      keyPrefix_(root_ + "/k/"),
      client_(options_.endpoints) {
  C10D_CHECK_ARG(!options_.prefix.empty(), "EtcdStore: empty prefix");
  C10D_CHECK_ARG(options_.leaseTtlSeconds >= 0, "EtcdStore: negative lease TTL ",
                 options_.leaseTtlSeconds, " s");
  if (options_.leaseTtlSeconds == 0) return;
  acquireLease("EtcdStore: taking the lease of prefix '" + options_.prefix + "'", requestTimeout());
  keepalive_ = std::thread([this] { keepaliveLoop(); });
  // Return once the thread is parked in its wait, not still starting: a process that forks right
  // after (a test harness, a launcher) must not fork while the thread holds a lock the child
  // would inherit held. glibc's malloc is fork-safe, but ASan's allocator (GCC 12) is not:
  // a rank forked during the thread's start deadlocked in its first malloc.
  MutexLock lock(leaseMu_);
  lock.wait(stopCv_, [&]() C10D_REQUIRES(leaseMu_) { return keepaliveWaiting_; });
}

EtcdStore::~EtcdStore() {
  {
    MutexLock lock(leaseMu_);
    stop_ = true;
  }
  stopCv_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
  // The lease is not revoked: the job's other clients may still use it. It expires ttl seconds
  // after the last client stops keeping it alive.
}

int64_t EtcdStore::leaseId() const {
  MutexLock lock(leaseMu_);
  return lease_;
}

Milliseconds EtcdStore::requestTimeout() const {
  return std::max(timeout_, Milliseconds(1));
}

void EtcdStore::acquireLease(const std::string& what, Milliseconds timeout) {
  const auto deadline = deadlineAfter(timeout);
  const std::string leaseKey = root_ + "/lease";
  const Json ttl = std::to_string(options_.leaseTtlSeconds);
  for (int attempt = 0;; ++attempt) {
    // Someone else's lease, still alive?
    Json r = client_.call("/v3/kv/range", {{"key", base64Encode(leaseKey)}}, timeout, what);
    if (const int64_t id = etcd::leaseIdOf(r, what); id != 0) {
      Json ka = client_.call("/v3/lease/keepalive", {{"ID", std::to_string(id)}}, timeout, what);
      if (etcd::keepaliveTtl(ka, what) > 0) {
        MutexLock lock(leaseMu_);
        lease_ = id;
        return;
      }
    }
    // None: grant one and publish it, unless another client published one first.
    Json g = client_.call("/v3/lease/grant", {{"TTL", ttl}}, timeout, what);
    const int64_t id = jsonInt(g, "ID");
    Json txn = {{"compare",
                 {{{"key", base64Encode(leaseKey)},
                   {"target", "VERSION"},
                   {"result", "EQUAL"},
                   {"version", "0"}}}},
                {"success", {{{"request_put", putOp(leaseKey, std::to_string(id), id)}}}}};
    Json t = client_.call("/v3/kv/txn", txn, timeout, what);
    if (txnSucceeded(t, what)) {
      MutexLock lock(leaseMu_);
      lease_ = id;
      return;
    }
    client_.call("/v3/lease/revoke", {{"ID", std::to_string(id)}}, timeout, what);
    if (Clock::now() > deadline) {
      C10D_THROW(TimeoutError, what, ": no lease after ", attempt + 1, " attempts within ",
                 timeout.count(), " ms");
    }
  }
}

void EtcdStore::keepaliveLoop() {
  pthread_setname_np(pthread_self(), "c10d-etcd-lease");
  const Milliseconds interval(options_.leaseTtlSeconds * 1000 / 3);
  // Its own bound, not the store's timeout (setTimeout may change that from another thread).
  const Milliseconds timeout = std::max(Milliseconds(1), std::min(interval, options_.timeout));
  bool failing = false;
  MutexLock lock(leaseMu_);
  keepaliveWaiting_ = true;
  stopCv_.notify_all();  // the constructor; the wait below releases leaseMu_ for it
  while (!lock.waitFor(stopCv_, interval, [&]() C10D_REQUIRES(leaseMu_) { return stop_; })) {
    const int64_t id = lease_;
    lock.unlock();
    try {
      const std::string what = "EtcdStore: keepalive of lease " + std::to_string(id);
      Json ka = client_.call("/v3/lease/keepalive", {{"ID", std::to_string(id)}}, timeout, what);
      if (etcd::keepaliveTtl(ka, what) == 0) {
        std::fprintf(stderr,
                     "c10d: warning: EtcdStore: lease %lld of prefix '%s' expired (no keepalive "
                     "for %d s); etcd deleted the job's keys; taking a new lease\n",
                     static_cast<long long>(id), options_.prefix.c_str(), options_.leaseTtlSeconds);
        acquireLease(what, timeout);
      }
      failing = false;
    } catch (const std::exception& e) {
      if (!failing) std::fprintf(stderr, "c10d: warning: %s (retrying)\n", e.what());
      failing = true;
    }
    lock.lock();
  }
}

Json EtcdStore::callWithLease(const std::string& path,
                              const std::function<Json(int64_t lease)>& body,
                              const std::string& what) {
  try {
    return client_.call(path, body(leaseId()), requestTimeout(), what);
  } catch (const EtcdError& e) {
    if (e.etcdMessage().find("lease not found") == std::string::npos) throw;
  }
  acquireLease(what, requestTimeout());
  return client_.call(path, body(leaseId()), requestTimeout(), what);
}

EtcdStore::KeyState EtcdStore::read(const std::string& key, const std::string& what,
                                    int64_t* revision) {
  Json r =
      client_.call("/v3/kv/range", {{"key", base64Encode(etcdKey(key))}}, requestTimeout(), what);
  if (revision != nullptr) *revision = etcd::headerRevision(r, what);
  return etcd::rangeKeyValue(r, what);
}

void EtcdStore::set(const std::string& key, const Bytes& value) {
  const std::string v = toString(value);
  callWithLease(
      "/v3/kv/put", [&](int64_t lease) { return putOp(etcdKey(key), v, lease); },
      "EtcdStore::set of key '" + key + "' (" + std::to_string(value.size()) + " bytes)");
}

Bytes EtcdStore::get(const std::string& key) {
  const Milliseconds timeout = resolve(kUnsetTimeout);
  const auto deadline = deadlineAfter(timeout);
  const std::string what = "EtcdStore::get of key '" + key + "'";
  while (true) {
    int64_t revision = 0;
    KeyState s = read(key, what, &revision);
    if (s.present) return toBytes(s.value);
    const Milliseconds left = remaining(deadline);
    if (left.count() > 0 && watchForPut(key, revision, left, what)) continue;
    if (Clock::now() < deadline) continue;
    C10D_THROW(TimeoutError, "EtcdStore::get: key '", key, "' was not set in etcd at ",
               client_.currentEndpoint(), " (prefix '", options_.prefix,
               "') within the timeout of ", timeout.count(), " ms");
  }
}

std::string EtcdStore::readModifyWrite(const std::string& key, const std::string& what,
                                       const std::function<std::string(const KeyState&)>& update) {
  const Milliseconds timeout = requestTimeout();
  const auto deadline = deadlineAfter(timeout);
  const std::string ek = base64Encode(etcdKey(key));
  KeyState s = read(key, what);
  for (int attempt = 0;; ++attempt) {
    const std::string next = update(s);
    Json cmp =
        s.present ? Json{{"key", ek},
                         {"target", "MOD"},
                         {"result", "EQUAL"},
                         {"mod_revision", std::to_string(s.modRevision)}}
                  : Json{{"key", ek}, {"target", "VERSION"}, {"result", "EQUAL"}, {"version", "0"}};
    Json r = callWithLease(
        "/v3/kv/txn",
        [&](int64_t lease) {
          return Json{{"compare", {cmp}},
                      {"success", {{{"request_put", putOp(etcdKey(key), next, lease)}}}},
                      {"failure", {{{"request_range", {{"key", ek}}}}}}};
        },
        what);
    if (txnSucceeded(r, what)) return next;
    // Someone else changed the key: retry from the value the failed transaction read.
    s = etcd::rangeKeyValue(etcd::txnRange(r, 0, what), what);
    if (Clock::now() > deadline) {
      C10D_THROW(TimeoutError, what, ": ", attempt + 1,
                 " attempts lost to concurrent writers of the key within the timeout of ",
                 timeout.count(), " ms");
    }
    backoff(attempt);
  }
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  const std::string what = "EtcdStore::add to key '" + key + "'";
  const std::string result = readModifyWrite(key, what, [&](const KeyState& s) {
    int64_t v = 0;
    if (s.present) {
      size_t used = 0;
      try {
        v = std::stoll(s.value, &used);
      } catch (const std::exception&) {
        used = std::string::npos;
      }
      if (used != s.value.size()) {
        C10D_THROW(InvalidArgument, what, ": its value '", s.value.substr(0, 64),
                   "' is not a decimal integer");
      }
    }
    return std::to_string(v + delta);
  });
  return std::stoll(result);
}

void EtcdStore::append(const std::string& key, const Bytes& value) {
  const std::string v = toString(value);
  readModifyWrite(key, "EtcdStore::append to key '" + key + "'",
                  [&](const KeyState& s) { return s.value + v; });
}

Bytes EtcdStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  const std::string what = "EtcdStore::compareSet of key '" + key + "'";
  const Milliseconds timeout = requestTimeout();
  const auto deadline = deadlineAfter(timeout);
  const std::string ek = base64Encode(etcdKey(key));
  const std::string exp = toString(expected);
  const std::string des = toString(desired);
  // First try: "absent" (expected empty) or "value == expected"; after a miss that was not a
  // real mismatch (the key is present with an empty value, or vanished), retry on the revision.
  Json cmp = exp.empty()
                 ? Json{{"key", ek}, {"target", "VERSION"}, {"result", "EQUAL"}, {"version", "0"}}
                 : Json{{"key", ek},
                        {"target", "VALUE"},
                        {"result", "EQUAL"},
                        {"value", base64Encode(exp)}};
  for (int attempt = 0;; ++attempt) {
    Json r = callWithLease(
        "/v3/kv/txn",
        [&](int64_t lease) {
          return Json{{"compare", {cmp}},
                      {"success", {{{"request_put", putOp(etcdKey(key), des, lease)}}}},
                      {"failure", {{{"request_range", {{"key", ek}}}}}}};
        },
        what);
    if (txnSucceeded(r, what)) return desired;
    const KeyState current = etcd::rangeKeyValue(etcd::txnRange(r, 0, what), what);
    if (!current.present) {
      if (!exp.empty()) return expected;  // missing: nothing to compare with
      cmp = Json{{"key", ek}, {"target", "VERSION"}, {"result", "EQUAL"}, {"version", "0"}};
    } else {
      if (current.value != exp) return toBytes(current.value);
      cmp = Json{{"key", ek},
                 {"target", "MOD"},
                 {"result", "EQUAL"},
                 {"mod_revision", std::to_string(current.modRevision)}};
    }
    if (Clock::now() > deadline) {
      C10D_THROW(TimeoutError, what, ": ", attempt + 1,
                 " attempts lost to concurrent writers within the timeout of ", timeout.count(),
                 " ms");
    }
    backoff(attempt);
  }
}

std::vector<std::string> EtcdStore::missing(const std::vector<std::string>& keys, int64_t* revision,
                                            const std::string& what) {
  std::vector<std::string> out;
  *revision = std::numeric_limits<int64_t>::max();
  for (size_t begin = 0; begin < keys.size(); begin += kMaxTxnOps) {
    const size_t end = std::min(keys.size(), begin + kMaxTxnOps);
    Json ops = Json::array();
    for (size_t i = begin; i < end; ++i) {
      ops.push_back(
          {{"request_range", {{"key", base64Encode(etcdKey(keys[i]))}, {"count_only", true}}}});
    }
    Json r = client_.call("/v3/kv/txn", {{"success", ops}}, requestTimeout(), what);
    *revision = std::min(*revision, etcd::headerRevision(r, what));
    for (size_t i = begin; i < end; ++i) {
      if (jsonInt(etcd::txnRange(r, i - begin, what), "count") == 0) {
        out.push_back(keys[i]);
      }
    }
  }
  return out;
}

bool EtcdStore::watchForPut(const std::string& key, int64_t revision, Milliseconds timeout,
                            const std::string& what) {
  Json create = {{"key", base64Encode(etcdKey(key))},
                 {"start_revision", std::to_string(revision + 1)},
                 {"filters", {"NODELETE"}}};
  // Stop at the first put, or when etcd cancels the watch: either way the caller checks again.
  return client_.watch(create, timeout, what,
                       [&](const Json& msg) { return !etcd::watchReplyEndsWait(msg, what); });
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
  int64_t revision = 0;
  return missing(keys, &revision, "EtcdStore::check of keys " + describeKeys(keys)).empty();
}

void EtcdStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  timeout = resolve(timeout);
  const auto deadline = deadlineAfter(timeout);
  const std::string what = "EtcdStore::wait for keys " + describeKeys(keys);
  while (true) {
    int64_t revision = 0;
    const std::vector<std::string> miss = missing(keys, &revision, what);
    if (miss.empty()) return;
    const Milliseconds left = remaining(deadline);
    // One key at a time: once it is set, the check above finds the rest (or the next to watch).
    if (left.count() > 0 && watchForPut(miss.front(), revision, left, what)) continue;
    if (Clock::now() < deadline) continue;
    C10D_THROW(TimeoutError, "EtcdStore::wait: keys ", describeKeys(miss),
               " were not set in etcd at ", client_.currentEndpoint(), " (prefix '",
               options_.prefix, "') within the timeout of ", timeout.count(), " ms");
  }
}

bool EtcdStore::deleteKey(const std::string& key) {
  Json r = client_.call("/v3/kv/deleterange", {{"key", base64Encode(etcdKey(key))}},
                        requestTimeout(), "EtcdStore::deleteKey of key '" + key + "'");
  return jsonInt(r, "deleted") > 0;
}

int64_t EtcdStore::getNumKeys() {
  Json r = client_.call("/v3/kv/range",
                        {{"key", base64Encode(keyPrefix_)},
                         {"range_end", base64Encode(prefixEnd(keyPrefix_))},
                         {"count_only", true}},
                        requestTimeout(), "EtcdStore::getNumKeys");
  return jsonInt(r, "count");
}

std::vector<Bytes> EtcdStore::multiGet(const std::vector<std::string>& keys) {
  std::vector<Bytes> values(keys.size());
  std::vector<size_t> absent;
  const std::string what = "EtcdStore::multiGet of keys " + describeKeys(keys);
  for (size_t begin = 0; begin < keys.size(); begin += kMaxTxnOps) {
    const size_t end = std::min(keys.size(), begin + kMaxTxnOps);
    Json ops = Json::array();
    for (size_t i = begin; i < end; ++i) {
      ops.push_back({{"request_range", {{"key", base64Encode(etcdKey(keys[i]))}}}});
    }
    Json r = client_.call("/v3/kv/txn", {{"success", ops}}, requestTimeout(), what);
    for (size_t i = begin; i < end; ++i) {
      const etcd::KeyValue kv = etcd::rangeKeyValue(etcd::txnRange(r, i - begin, what), what);
      if (kv.present) {
        values[i] = toBytes(kv.value);
      } else {
        absent.push_back(i);
      }
    }
  }
  for (size_t i : absent) values[i] = get(keys[i]);  // waits, as get() does
  return values;
}

void EtcdStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  C10D_CHECK_ARG(keys.size() == values.size(), "EtcdStore::multiSet: ", keys.size(), " keys but ",
                 values.size(), " values");
  const std::string what = "EtcdStore::multiSet of keys " + describeKeys(keys);
  for (size_t begin = 0; begin < keys.size(); begin += kMaxTxnOps) {
    const size_t end = std::min(keys.size(), begin + kMaxTxnOps);
    callWithLease(
        "/v3/kv/txn",
        [&](int64_t lease) {
          Json ops = Json::array();
          for (size_t i = begin; i < end; ++i) {
            ops.push_back({{"request_put", putOp(etcdKey(keys[i]), toString(values[i]), lease)}});
          }
          return Json{{"success", ops}};
        },
        what);
  }
}

C10D_NAMESPACE_END
}  // namespace c10d
