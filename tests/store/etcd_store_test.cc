// EtcdStore beyond the conformance suite: URLs, the job lease (keys outlive no job by more than
// its TTL), prefixes, prompt wakeups, a killed server. Each test starts its own etcd; skipped
// where the etcd binary is missing.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/etcd/etcd_store.h"
#include "tests/store/server_store_checks.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

#define SKIP_WITHOUT_ETCD()                                                              \
  do {                                                                                   \
    const std::string reason = ServerProcess::serverMissing(ServerProcess::Kind::kEtcd); \
    if (!reason.empty()) GTEST_SKIP() << reason;                                         \
  } while (0)

std::shared_ptr<EtcdStore> connect(const ServerProcess& server, const std::string& prefix, int ttl,
                                   Milliseconds timeout = Milliseconds(20000)) {
  EtcdStoreOptions o;
  o.endpoints = {server.endpoint()};
  o.prefix = prefix;
  o.leaseTtlSeconds = ttl;
  o.timeout = timeout;
  return std::make_shared<EtcdStore>(o);
}

TEST(EtcdStoreUrl, Parses) {
  EtcdStoreOptions o = parseEtcdUrl("etcd://10.0.0.1:2379");
  EXPECT_EQ(o.endpoints, std::vector<std::string>{"10.0.0.1:2379"});
  EXPECT_EQ(o.prefix, "c10d");
  EXPECT_EQ(o.leaseTtlSeconds, 60);
  o = parseEtcdUrl("etcd://a:1,b.example:2379,c:3/jobs/42/?ttl=0");
  EXPECT_EQ(o.endpoints, (std::vector<std::string>{"a:1", "b.example:2379", "c:3"}));
  EXPECT_EQ(o.prefix, "jobs/42");
  EXPECT_EQ(o.leaseTtlSeconds, 0);
  for (const char* bad :
       {"http://a:1", "etcd://", "etcd://a", "etcd://a:0", "etcd://a:70000/p", "etcd://a:1,/p",
        "etcd://a:1/", "etcd://a:1/p?ttl=-1", "etcd://a:1/p?ttl=x", "etcd://a:1/p?lease=3"}) {
    EXPECT_THROW(parseEtcdUrl(bad), InvalidArgument) << bad;
  }
  try {
    parseEtcdUrl("etcd://a:1/p?ttl=x");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ttl='x'"), std::string::npos) << e.what();
  }
  try {
    parseEtcdUrl("etcd://a:1,b:2x/p");
    ADD_FAILURE() << "no error for port 2x";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("port '2x' of endpoint 'b:2x' is not in [1, 65535]"),
              std::string::npos)
        << e.what();
  }
}

TEST(EtcdStore, UnreachableEndpointIsNamed) {
  // A port nothing listens on (a server we start and kill).
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  const std::string endpoint = server.endpoint();
  server.kill();
  try {
    connect(server, "job", 60, Milliseconds(2000));
    FAIL() << "connected to a dead etcd";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find(endpoint), std::string::npos) << e.what();
  }
}

// The job's keys live as long as some client keeps the lease alive, and go ttl seconds after the
// last one stops.
TEST(EtcdStore, LeaseExpiryRemovesKeys) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  constexpr int kTtl = 2;
  auto observer = connect(server, "job", /*ttl=*/0);  // no lease: does not keep the job's alive
  {
    auto worker = connect(server, "job", kTtl);
    auto second = connect(server, "job", kTtl);
    EXPECT_NE(worker->leaseId(), 0);
    EXPECT_EQ(second->leaseId(), worker->leaseId()) << "one lease per job";
    worker->set("a", std::string("1"));
    second->add("b", 5);
    observer->set("unleased", std::string("stays"));
    // Kept alive past the TTL.
    std::this_thread::sleep_for(std::chrono::seconds(kTtl + 2));
    EXPECT_TRUE(observer->check({"a", "b"}));
    EXPECT_EQ(observer->getString("b"), "5");  // (add(b, 0) would re-put b without the lease)
  }
  // Both clients gone: no more keepalives.
  const auto start = Clock::now();
  // etcd expires a lease within about a second of its TTL; a loaded machine may take longer, and a
  // lease still kept alive would keep the keys for the whole 30 s.
  while (observer->check({"a"}) && Clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto goneAfter = std::chrono::duration_cast<Milliseconds>(Clock::now() - start);
  EXPECT_FALSE(observer->check({"a"}));
  EXPECT_FALSE(observer->check({"b"}));
  EXPECT_LT(goneAfter.count(), (kTtl + 10) * 1000);
  // The observer's own write had no lease and stays; a new client of the job starts afresh.
  EXPECT_EQ(observer->getString("unleased"), "stays");
  auto next = connect(server, "job", kTtl);
  next->set("c", std::string("3"));
  EXPECT_EQ(observer->getString("c"), "3");
}

TEST(EtcdStore, PrefixesAreSeparateJobs) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  auto a = connect(server, "job-a", 60);
  auto b = connect(server, "job-a-b", 60);
  a->set("k", std::string("A"));
  b->set("k", std::string("B"));
  b->set("k2", std::string("B"));
  EXPECT_EQ(a->getString("k"), "A");
  EXPECT_EQ(b->getString("k"), "B");
  EXPECT_EQ(a->getNumKeys(), 1);
  EXPECT_EQ(b->getNumKeys(), 2);
  EXPECT_NE(a->leaseId(), b->leaseId());
  EXPECT_FALSE(a->check({"k2"}));
}

TEST(EtcdStore, BatchesLargerThanOneTransaction) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  auto store = connect(server, "job", 60);
  std::vector<std::string> keys;
  std::vector<Bytes> values;
  for (int i = 0; i < 300; ++i) {  // etcd allows 128 operations per transaction
    keys.push_back("key" + std::to_string(i));
    values.push_back(toBytes(std::to_string(i * i)));
  }
  store->multiSet(keys, values);
  EXPECT_EQ(store->multiGet(keys), values);
  EXPECT_TRUE(store->check(keys));
  EXPECT_EQ(store->getNumKeys(), 300);
}

TEST(EtcdStore, AddOnNonIntegerValueIsNamed) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  auto store = connect(server, "job", 0);
  store->set("text", std::string("abc"));
  try {
    store->add("text", 1);
    FAIL() << "add on 'abc' succeeded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'text'"), std::string::npos) << e.what();
  }
}

TEST(EtcdStore, SetFromAnotherProcessWakesPromptly) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  expectPromptWakeups([&](Milliseconds t) { return connect(server, "job", 60, t); });
}

TEST(EtcdStore, KilledServerIsNamedWithinTimeout) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  expectServerLossIsNamed(server, [&](Milliseconds t) { return connect(server, "job", 60, t); });
}

TEST(EtcdStore, InitUrlRendezvous) {
  SKIP_WITHOUT_ETCD();
  ServerProcess server(ServerProcess::Kind::kEtcd);
  const std::string url = "etcd://" + server.endpoint() + "/rdzv?ttl=30&world_size=2&rank=1";
  Rendezvous rv = rendezvous(url, -1, -1, Milliseconds(20000));
  EXPECT_EQ(rv.rank, 1);
  EXPECT_EQ(rv.worldSize, 2);
  auto* etcd = dynamic_cast<EtcdStore*>(rv.store.get());
  ASSERT_NE(etcd, nullptr);
  EXPECT_EQ(etcd->options().prefix, "rdzv");
  EXPECT_EQ(etcd->options().leaseTtlSeconds, 30);
  rv.store->set("x", std::string("1"));
  EXPECT_EQ(connect(server, "rdzv", 30)->getString("x"), "1");
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
