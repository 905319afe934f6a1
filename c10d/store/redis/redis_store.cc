#include "c10d/store/redis/redis_store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"
#include "c10d/store/redis/redis_connection.h"
#include "c10d/store/redis/redis_reply.h"
#include "c10d/store/store_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using redis::Connection;
using redis::Reply;

namespace {

using storeutil::describeKeys;

using Clock = std::chrono::steady_clock;

// Idle connections kept per store.
constexpr size_t kMaxIdle = 8;
// While waiting, the keys are checked again at least this often (see the header).
constexpr Milliseconds kRecheck{1000};

// Atomically: set KEYS[1] to ARGV[2] when it is missing and ARGV[1] is empty, or equals ARGV[1];
// publish on ARGV[3] when it did. Returns the value the key has afterwards (ARGV[1] if missing).
constexpr const char* kCompareSetScript = R"lua(
local v = redis.call('GET', KEYS[1])
if (v == false and ARGV[1] == '') or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('PUBLISH', ARGV[3], '')
  return ARGV[2]
end
if v == false then return ARGV[1] end
return v
)lua";

[[noreturn]] void badUrl(const std::string& url, const std::string& problem) {
  C10D_THROW(InvalidArgument, "redis store URL '", url, "': ", problem,
             " (expected redis://[:PASSWORD@]HOST:PORT[/PREFIX])");
}

// `s` with the glob characters of a SCAN MATCH pattern escaped.
std::string globEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

RedisStoreOptions parseRedisUrl(const std::string& url) {
  const std::string scheme = "redis://";
  if (url.compare(0, scheme.size(), scheme) != 0) badUrl(url, "does not start with redis://");
  std::string rest = url.substr(scheme.size());
  RedisStoreOptions o;
  const size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    const std::string user = rest.substr(0, at);
    if (user.empty() || user[0] != ':') badUrl(url, "credentials must be ':PASSWORD@'");
    o.password = user.substr(1);
    rest = rest.substr(at + 1);
  }
  const size_t slash = rest.find('/');
  const std::string hp = rest.substr(0, slash);
  if (slash != std::string::npos) {
    std::string prefix = rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (prefix.empty()) badUrl(url, "empty prefix after '/'");
    o.prefix = prefix;
  }
  const size_t colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0) badUrl(url, "'" + hp + "' is not HOST:PORT");
  const std::string port = hp.substr(colon + 1);
  long long p = 0;
  if (!parseInteger(port, 1, 65535, &p)) {
    badUrl(url, "port '" + port + "' is not in [1, 65535]");
  }
  o.host = hp.substr(0, colon);
  if (o.host.size() > 2 && o.host.front() == '[' && o.host.back() == ']') {
    o.host = o.host.substr(1, o.host.size() - 2);
  }
  o.port = static_cast<int>(p);
  return o;
}

class RedisStore::Pooled {
 public:
  Pooled(RedisStore* store, std::unique_ptr<Connection> conn)
      : store_(store), conn_(std::move(conn)) {}
  Pooled(Pooled&&) = default;
  ~Pooled() {
    if (!conn_ || conn_->broken()) return;
    MutexLock lock(store_->mu_);
    if (store_->idle_.size() < kMaxIdle) store_->idle_.push_back(std::move(conn_));
  }
  Connection* operator->() { return conn_.get(); }

 private:
  RedisStore* store_;
  std::unique_ptr<Connection> conn_;
};

RedisStore::RedisStore(RedisStoreOptions options) : Store(options.timeout), options_(options) {
  C10D_CHECK_ARG(!options_.prefix.empty(), "RedisStore: empty prefix");
  // Fail here, not at the first call, when the server is not there.
  connection("RedisStore: connecting to Redis at " + endpoint())
      ->command({"PING"}, requestTimeout(), "RedisStore: PING");
}

RedisStore::~RedisStore() = default;

std::string RedisStore::endpoint() const {
  return options_.host + ":" + std::to_string(options_.port);
}

Milliseconds RedisStore::requestTimeout() const {
  return std::max(timeout_, Milliseconds(1));
}

RedisStore::Pooled RedisStore::connection(const std::string& what) {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Pooled(this, std::move(c));
    }
  }
  return Pooled(this, std::make_unique<Connection>(options_.host, options_.port, options_.password,
                                                   requestTimeout(), what));
}

void RedisStore::set(const std::string& key, const Bytes& value) {
  const std::string what = "RedisStore::set of key '" + key + "'";
  connection(what)->pipeline(
      {{"SET", redisKey(key), toString(value)}, {"PUBLISH", channel(key), ""}}, requestTimeout(),
      what);
}

Bytes RedisStore::get(const std::string& key) {
  const Milliseconds timeout = resolve(kUnsetTimeout);
  const auto start = Clock::now();
  const std::string what = "RedisStore::get of key '" + key + "'";
  while (true) {
    Reply r = connection(what)->command({"GET", redisKey(key)}, requestTimeout(), what);
    std::string value;
    if (redis::replyValue(*r, &value, what, endpoint())) return toBytes(value);
    const auto left = timeout - std::chrono::floor<Milliseconds>(Clock::now() - start);
    try {
      wait({key}, std::max(left, Milliseconds(0)));
    } catch (const TimeoutError&) {
      C10D_THROW(TimeoutError, "RedisStore::get: key '", key, "' was not set in Redis at ",
                 endpoint(), " (prefix '", options_.prefix, "') within the timeout of ",
                 timeout.count(), " ms");
    }
  }
}

int64_t RedisStore::add(const std::string& key, int64_t delta) {
  const std::string what = "RedisStore::add to key '" + key + "'";
  auto replies = connection(what)->pipeline(
      {{"INCRBY", redisKey(key), std::to_string(delta)}, {"PUBLISH", channel(key), ""}},
      requestTimeout(), what);
  return redis::replyInteger(*replies[0], what, endpoint());
}

void RedisStore::append(const std::string& key, const Bytes& value) {
  const std::string what = "RedisStore::append to key '" + key + "'";
  connection(what)->pipeline(
      {{"APPEND", redisKey(key), toString(value)}, {"PUBLISH", channel(key), ""}}, requestTimeout(),
      what);
}

Bytes RedisStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  const std::string what = "RedisStore::compareSet of key '" + key + "'";
  Reply r = connection(what)->command({"EVAL", kCompareSetScript, "1", redisKey(key),
                                       toString(expected), toString(desired), channel(key)},
                                      requestTimeout(), what);
  std::string value;
  if (!redis::replyValue(*r, &value, what, endpoint())) {
    C10D_THROW(Error, what, ": Redis at ", endpoint(), " answered the compare-and-set with nil");
  }
  return toBytes(value);
}

std::vector<std::string> RedisStore::missing(const std::vector<std::string>& keys,
                                             const std::string& what) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& k : keys) cmds.push_back({"EXISTS", redisKey(k)});
  auto replies = connection(what)->pipeline(cmds, requestTimeout(), what);
  std::vector<std::string> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (redis::replyInteger(*replies[i], what, endpoint()) == 0) out.push_back(keys[i]);
  }
  return out;
}

bool RedisStore::check(const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  return missing(keys, "RedisStore::check of keys " + describeKeys(keys)).empty();
}

void RedisStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  timeout = resolve(timeout);
  if (keys.empty()) return;
  const std::string what = "RedisStore::wait for keys " + describeKeys(keys);
  std::vector<std::string> miss = missing(keys, what);
  if (miss.empty()) return;
  const auto deadline =
      Clock::now() + std::min(timeout, Milliseconds(std::chrono::hours(24 * 365)));
  auto left = [&] {  // rounded up: never time out before the deadline
    return std::max(Milliseconds(0), std::chrono::ceil<Milliseconds>(deadline - Clock::now()));
  };
  auto timedOut = [&] {
    C10D_THROW(TimeoutError, "RedisStore::wait: keys ", describeKeys(miss),
               " were not set in Redis at ", endpoint(), " (prefix '", options_.prefix,
               "') within the timeout of ", timeout.count(), " ms");
  };
  if (left().count() == 0) timedOut();
  // A subscriber connection of this call's own: a subscribed connection takes no other commands.
  Connection sub(options_.host, options_.port, options_.password, std::max(left(), Milliseconds(1)),
                 what);
  std::vector<std::string> subscribe{"SUBSCRIBE"};
  for (const auto& k : miss) subscribe.push_back(channel(k));
  sub.send(subscribe, std::max(left(), Milliseconds(1)), what);
  size_t confirmed = 0;
  while (confirmed < miss.size()) {
    Reply r = sub.nextReply(left(), what);
    if (!r) timedOut();
    ++confirmed;  // replies to SUBSCRIBE, one per channel
  }
  // Subscribed: from here on no set is missed. Check, then sleep until a message or a recheck.
  while (true) {
    miss = missing(miss, what);
    if (miss.empty()) return;
    if (left().count() == 0) timedOut();
    Reply r = sub.nextReply(std::min(left(), kRecheck), what);
    // Drain what else arrived, so one check covers a burst of sets.
    while (r && (r = sub.nextReply(Milliseconds(0), what))) {
    }
  }
}

bool RedisStore::deleteKey(const std::string& key) {
  const std::string what = "RedisStore::deleteKey of key '" + key + "'";
  Reply r = connection(what)->command({"DEL", redisKey(key)}, requestTimeout(), what);
  return redis::replyInteger(*r, what, endpoint()) > 0;
}

int64_t RedisStore::getNumKeys() {
  const std::string what = "RedisStore::getNumKeys";
  auto conn = connection(what);
  const std::string pattern = globEscape(options_.prefix + "/") + "*";
  int64_t count = 0;
  std::string cursor = "0";
  do {
    Reply r =
        conn->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, requestTimeout(), what);
    const redis::ScanPage page = redis::scanPage(*r, what, endpoint());
    cursor = page.cursor;
    count += static_cast<int64_t>(page.keys);
  } while (cursor != "0");
  return count;
}

std::vector<Bytes> RedisStore::multiGet(const std::vector<std::string>& keys) {
  if (keys.empty()) return {};
  const std::string what = "RedisStore::multiGet of keys " + describeKeys(keys);
  std::vector<std::string> cmd{"MGET"};
  for (const auto& k : keys) cmd.push_back(redisKey(k));
  Reply r = connection(what)->command(cmd, requestTimeout(), what);
  const std::vector<const redisReply*> found = redis::mgetValues(*r, keys.size(), what, endpoint());
  std::vector<Bytes> values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    values[i] = found[i] != nullptr ? toBytes(redis::replyString(*found[i])) : get(keys[i]);
  }
  return values;
}

void RedisStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  C10D_CHECK_ARG(keys.size() == values.size(), "RedisStore::multiSet: ", keys.size(), " keys but ",
                 values.size(), " values");
  if (keys.empty()) return;
  const std::string what = "RedisStore::multiSet of keys " + describeKeys(keys);
  std::vector<std::vector<std::string>> cmds{{"MSET"}};
  for (size_t i = 0; i < keys.size(); ++i) {
    cmds[0].push_back(redisKey(keys[i]));
    cmds[0].push_back(toString(values[i]));
    cmds.push_back({"PUBLISH", channel(keys[i]), ""});
  }
  connection(what)->pipeline(cmds, requestTimeout(), what);
}

C10D_NAMESPACE_END
}  // namespace c10d
