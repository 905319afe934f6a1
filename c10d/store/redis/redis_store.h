// RedisStore: a Store kept in a Redis server (>= 5; tested with Debian's redis-server 7), through
// hiredis. Library c10d_store_redis; URL redis://[:PASSWORD@]HOST:PORT[/PREFIX] (parseRedisUrl).
//
// Layout: the store's key K is the Redis string "PREFIX/K" (default prefix "c10d"); one prefix
// per job. getNumKeys counts them with SCAN MATCH, which walks the whole keyspace: cheap for a
// Redis used by a few jobs, O(keys) in general.
//
// Operations: set = SET, add = INCRBY (the value is a decimal integer, as everywhere), append =
// APPEND, deleteKey = DEL, check = EXISTS, multiGet = MGET, multiSet = MSET; compareSet is a Lua
// script (GET, compare, SET), atomic like every script. Every write also PUBLISHes on the channel
// "c10d-set:PREFIX/K" in the same round trip (pipelined, or inside the script).
//
// wait / get of a missing key: SUBSCRIBE to the keys' channels on a connection of the call's own,
// check again (a set between the first check and the subscription is not lost), then sleep on
// the subscription; each message triggers a check. Writers that are not c10d clients (redis-cli)
// publish nothing, and neither does a key's expiry, so the check is also repeated once a second
// while waiting: a safety net, not a poll loop. Nothing needs keyspace notifications (which need
// CONFIG SET and are often disabled on managed Redis).
//
// Keys never expire: Redis has no per-job lease. A job that must not leave keys behind deletes
// its prefix (redis-cli --scan --pattern 'PREFIX/*' | xargs redis-cli del) or uses a Redis of its
// own.
//
// Threads: none. Thread-safe: each call takes an idle connection from a small pool (or opens one)
// and returns it; a connection that failed is closed, so the next call reconnects.
//
// Timeouts and errors: connects, requests and waits are bounded by the store's timeout (wait: its
// argument); TimeoutError names the key(s), the server and the timeout. A server that cannot be
// reached or drops the connection is CommError naming host:port; an error reply is Error with
// Redis's message (InvalidArgument for add on a value that is not an integer).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct RedisStoreOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;         // AUTH when not empty; never logged
  std::string prefix = "c10d";  // the job's namespace
  Milliseconds timeout = kDefaultStoreTimeout;
};

// Parses redis://[:PASSWORD@]HOST:PORT[/PREFIX]; throws InvalidArgument naming what is wrong.
RedisStoreOptions parseRedisUrl(const std::string& url);

namespace redis {
class Connection;
}

class RedisStore : public Store {
 public:
  // Connects once to check the server is there; throws CommError / TimeoutError if not.
  explicit RedisStore(RedisStoreOptions options);
  ~RedisStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  using Store::set;
  using Store::wait;

  const RedisStoreOptions& options() const { return options_; }

 private:
  class Pooled;  // a connection from idle_, returned to it unless it broke
  Pooled connection(const std::string& what) C10D_EXCLUDES(mu_);
  std::string redisKey(const std::string& key) const { return options_.prefix + "/" + key; }
  std::string channel(const std::string& key) const { return "c10d-set:" + redisKey(key); }
  std::string endpoint() const;
  Milliseconds requestTimeout() const;
  std::vector<std::string> missing(const std::vector<std::string>& keys, const std::string& what);

  const RedisStoreOptions options_;
  Mutex mu_;
  std::vector<std::unique_ptr<redis::Connection>> idle_ C10D_GUARDED_BY(mu_);
};

C10D_NAMESPACE_END
}  // namespace c10d
