// Stores by URL scheme from a program linked with libc10d only: etcd:// and redis:// load their
// libraries (libc10d_store_<scheme>.so.<ABI>, found beside libc10d) on first use.
#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/store_registry.h"
#include "tests/store/store_servers.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

TEST(StoreUrl, UnknownSchemeNamesTheLibraryTried) {
  try {
    createStoreFromUrl("nosuch://h:1/p", Milliseconds(1000));
    FAIL();
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown scheme 'nosuch'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("libc10d_store_nosuch.so"), std::string::npos) << msg;
  }
  EXPECT_THROW(createStoreFromUrl("Bad_Scheme://h:1", Milliseconds(1000)), InvalidArgument);
  EXPECT_THROW(parseInitUrl("nosuch://h:1/p?rank=0&world_size=1"), InvalidArgument);
}

#ifdef C10D_TEST_REDIS_STORE
TEST(StoreUrl, RedisLoadsItsLibrary) {
  const std::string reason = ServerProcess::serverMissing(ServerProcess::Kind::kRedis);
  if (!reason.empty()) GTEST_SKIP() << reason;
  ServerProcess server(ServerProcess::Kind::kRedis);
  Rendezvous rv = rendezvous("redis://" + server.endpoint() + "/job?rank=0&world_size=1", -1, -1,
                             Milliseconds(20000));
  rv.store->set("k", std::string("v"));
  auto again = createStoreFromUrl("redis://" + server.endpoint() + "/job", Milliseconds(20000));
  EXPECT_EQ(again->getString("k"), "v");
}
#endif

#ifdef C10D_TEST_ETCD_STORE
TEST(StoreUrl, EtcdLoadsItsLibrary) {
  const std::string reason = ServerProcess::serverMissing(ServerProcess::Kind::kEtcd);
  if (!reason.empty()) GTEST_SKIP() << reason;
  ServerProcess server(ServerProcess::Kind::kEtcd);
  auto store =
      createStoreFromUrl("etcd://" + server.endpoint() + "/job?ttl=10", Milliseconds(20000));
  EXPECT_EQ(store->add("n", 2), 2);
  EXPECT_EQ(
      createStoreFromUrl("etcd://" + server.endpoint() + "/job", Milliseconds(20000))->add("n", 1),
      3);
}
#endif

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
