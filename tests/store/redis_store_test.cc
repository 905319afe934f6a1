// RedisStore beyond the conformance suite: URLs, prefixes, errors, prompt wakeups, a killed
// server, and the init URL. Each test starts its own redis-server; skipped where it is missing.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/redis/redis_store.h"
#include "tests/store/server_store_checks.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

#define SKIP_WITHOUT_REDIS()                                                              \
  do {                                                                                    \
    const std::string reason = ServerProcess::serverMissing(ServerProcess::Kind::kRedis); \
    if (!reason.empty()) GTEST_SKIP() << reason;                                          \
  } while (0)

std::shared_ptr<RedisStore> connect(const ServerProcess& server, const std::string& prefix,
                                    Milliseconds timeout = Milliseconds(20000)) {
  RedisStoreOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.prefix = prefix;
  o.timeout = timeout;
  return std::make_shared<RedisStore>(o);
}

TEST(RedisStoreUrl, Parses) {
  RedisStoreOptions o = parseRedisUrl("redis://10.0.0.1:6379");
  EXPECT_EQ(o.host, "10.0.0.1");
  EXPECT_EQ(o.port, 6379);
  EXPECT_EQ(o.prefix, "c10d");
  EXPECT_EQ(o.password, "");
  o = parseRedisUrl("redis://:s3cr@t@redis.example:1/jobs/7/");
  EXPECT_EQ(o.password, "s3cr@t");
  EXPECT_EQ(o.host, "redis.example");
  EXPECT_EQ(o.port, 1);
  EXPECT_EQ(o.prefix, "jobs/7");
  EXPECT_EQ(parseRedisUrl("redis://[::1]:6379/p").host, "::1");
  for (const char* bad : {"rediss://a:1", "redis://", "redis://a", "redis://a:0", "redis://a:x/p",
                          "redis://a:1/", "redis://user:pw@a:1/p"}) {
    EXPECT_THROW(parseRedisUrl(bad), InvalidArgument) << bad;
  }
  for (const char* port : {"x", "+1", "1 ", "70000"}) {  // the message names the bad port
    try {
      parseRedisUrl(std::string("redis://a:") + port + "/p");
      ADD_FAILURE() << port;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("port '") + port + "' is not in [1, 65535]"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(RedisStore, UnreachableServerIsNamed) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  server.kill();
  try {
    connect(server, "job", Milliseconds(2000));
    FAIL() << "connected to a dead redis-server";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find(server.endpoint()), std::string::npos) << e.what();
  }
}

TEST(RedisStore, PrefixesAreSeparateJobs) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  auto a = connect(server, "job*a");  // glob characters in a prefix match only themselves
  auto b = connect(server, "jobXa");
  a->set("k", std::string("A"));
  b->set("k", std::string("B"));
  b->set("k2", std::string("B"));
  EXPECT_EQ(a->getString("k"), "A");
  EXPECT_EQ(b->getString("k"), "B");
  EXPECT_EQ(a->getNumKeys(), 1);
  EXPECT_EQ(b->getNumKeys(), 2);
  EXPECT_FALSE(a->check({"k2"}));
}

TEST(RedisStore, AddOnNonIntegerValueIsNamed) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  auto store = connect(server, "job");
  store->set("text", std::string("abc"));
  try {
    store->add("text", 1);
    FAIL() << "add on 'abc' succeeded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'text'"), std::string::npos) << e.what();
  }
  // The connection that got the error reply is still good.
  EXPECT_EQ(store->getString("text"), "abc");
}

TEST(RedisStore, SetFromAnotherProcessWakesPromptly) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  expectPromptWakeups([&](Milliseconds t) { return connect(server, "job", t); });
}

TEST(RedisStore, KilledServerIsNamedWithinTimeout) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  expectServerLossIsNamed(server, [&](Milliseconds t) { return connect(server, "job", t); });
}

TEST(RedisStore, InitUrlRendezvous) {
  SKIP_WITHOUT_REDIS();
  ServerProcess server(ServerProcess::Kind::kRedis);
  Rendezvous rv = rendezvous("redis://" + server.endpoint() + "/rdzv?rank=0&world_size=3", -1, -1,
                             Milliseconds(20000));
  EXPECT_EQ(rv.rank, 0);
  EXPECT_EQ(rv.worldSize, 3);
  auto* redis = dynamic_cast<RedisStore*>(rv.store.get());
  ASSERT_NE(redis, nullptr);
  EXPECT_EQ(redis->options().prefix, "rdzv");
  rv.store->set("x", std::string("1"));
  EXPECT_EQ(connect(server, "rdzv")->getString("x"), "1");
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
