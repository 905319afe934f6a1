// TCPStore limits: value bytes, keys, bytes per client, total bytes and connections, each refused
// with an error naming the limit, the key and the size, for the offending client only; the
// settings from options, the environment and the defaults.
#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "c10d/store/tcp/tcp_store_server_core.h"
#include "tests/store/tcp_store_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using test::clientOptions;
using test::expectThrows;
using test::ScopedEnv;

TCPStoreServerOptions limited(const TCPStoreLimits& limits) {
  TCPStoreServerOptions o;
  o.bindAddress = "127.0.0.1";
  o.secret = "";
  o.limits = limits;
  return o;
}

void expectMentions(const std::string& msg, const std::vector<std::string>& parts) {
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in " << msg;
}

TEST(TCPStoreLimitsTest, ValueBytes) {
  TCPStoreLimits l;
  l.maxValueBytes = 1024;
  TCPStoreServer server(limited(l));
  TCPStore a(clientOptions(server.port()));
  a.set("fits", Bytes(1024, 1));
  std::string msg = expectThrows<InvalidArgument>([&] { a.set("big", Bytes(1025, 1)); });
  expectMentions(msg, {"set of key 'big'", "1025 bytes", "limit of 1024 bytes per value",
                       "maxValueBytes", "C10D_STORE_MAX_VALUE_BYTES"});
  EXPECT_FALSE(a.check({"big"}));
  // Growth counts: an append past the limit is refused, the value left as it was.
  msg = expectThrows<InvalidArgument>([&] { a.append("fits", Bytes{2}); });
  expectMentions(msg, {"append of key 'fits'", "1025 bytes"});
  EXPECT_EQ(a.get("fits"), Bytes(1024, 1));
  msg =
      expectThrows<InvalidArgument>([&] { a.compareSet("fits", Bytes(1024, 1), Bytes(2000, 3)); });
  expectMentions(msg, {"compareSet of key 'fits'", "2000 bytes"});
  // A multiSet with one value too large is refused whole.
  msg = expectThrows<InvalidArgument>([&] {
    a.multiSet({"m1", "m2"}, {Bytes(10, 0), Bytes(1500, 0)});
  });
  expectMentions(msg, {"multiSet of key 'm2'", "1500 bytes"});
  EXPECT_FALSE(a.check({"m1"}));
  EXPECT_EQ(a.getNumKeys(), 1);  // the connection is still in step
}

TEST(TCPStoreLimitsTest, Keys) {
  TCPStoreLimits l;
  l.maxKeys = 3;
  TCPStoreServer server(limited(l));
  TCPStore a(clientOptions(server.port()));
  TCPStore b(clientOptions(server.port()));
  a.set("k1", "1");
  a.set("k2", "2");
  b.add("k3", 1);
  std::string msg = expectThrows<InvalidArgument>([&] { a.set("k4", "4"); });
  expectMentions(msg, {"set of key 'k4'", "holds 3 keys", "limit of 3", "C10D_STORE_MAX_KEYS"});
  msg = expectThrows<InvalidArgument>([&] { b.add("counter", 1); });
  expectMentions(msg, {"add of key 'counter'"});
  msg = expectThrows<InvalidArgument>([&] { b.multiSet({"k1", "x", "y"}, {{}, {}, {}}); });
  expectMentions(msg, {"multiSet of key 'x'"});
  EXPECT_EQ(a.getString("k1"), "1");  // nothing of the refused multiSet was applied
  a.set("k1", "overwrite is fine");
  EXPECT_EQ(b.add("k3", 1), 2);
  EXPECT_TRUE(a.deleteKey("k2"));
  b.set("k4", "room again");
  EXPECT_EQ(a.getNumKeys(), 3);
}

TEST(TCPStoreLimitsTest, BytesPerClient) {
  TCPStoreLimits l;
  l.maxClientBytes = 100;  // key + value bytes
  TCPStoreServer server(limited(l));
  TCPStore a(clientOptions(server.port()));
  TCPStore b(clientOptions(server.port()));
  a.set("a1", Bytes(58, 0));                                                            // 60
  std::string msg = expectThrows<InvalidArgument>([&] { a.set("a2", Bytes(40, 0)); });  // +42
  expectMentions(msg, {"set of key 'a2'", "42 bytes with the key", "would hold 102 bytes",
                       "limit of 100 bytes per client", "C10D_STORE_MAX_CLIENT_BYTES"});
  // Another client has its own allowance.
  b.set("b1", Bytes(90, 0));
  // Overwriting its own key replaces its charge; deleting frees it.
  a.set("a1", Bytes(8, 0));   // 10
  a.set("a2", Bytes(80, 0));  // +82 = 92
  EXPECT_TRUE(a.deleteKey("a1"));
  a.set("a3", Bytes(6, 0));  // 92 - 10 + 8 = 90
  // Writing another client's key takes over its charge: b is freed, a is charged.
  msg = expectThrows<InvalidArgument>([&] { a.set("b1", Bytes(20, 0)); });
  expectMentions(msg, {"set of key 'b1'", "would hold 112 bytes"});
  EXPECT_TRUE(a.deleteKey("a3"));
  a.set("b1", Bytes(6, 0));   // a: 82 + 8
  b.set("b2", Bytes(90, 0));  // b holds nothing now
  EXPECT_EQ(b.get("b2").size(), 90u);
}

TEST(TCPStoreLimitsTest, TotalBytes) {
  TCPStoreLimits l;
  l.maxTotalBytes = 200;
  TCPStoreServer server(limited(l));
  TCPStore a(clientOptions(server.port()));
  TCPStore b(clientOptions(server.port()));
  a.set("a", Bytes(99, 0));  // 100
  b.set("b", Bytes(89, 0));  // 190
  std::string msg = expectThrows<InvalidArgument>([&] { b.append("b", Bytes(20, 0)); });
  expectMentions(msg, {"append of key 'b'", "would hold 210 bytes", "limit of 200 bytes in all",
                       "C10D_STORE_MAX_TOTAL_BYTES"});
  a.deleteKey("a");
  b.append("b", Bytes(20, 0));
  EXPECT_EQ(b.get("b").size(), 109u);
}

TEST(TCPStoreLimitsTest, Connections) {
  TCPStoreLimits l;
  l.maxConnections = 2;
  TCPStoreServer server(limited(l));
  auto a = std::make_unique<TCPStore>(clientOptions(server.port(), Milliseconds(5000)));
  TCPStore b(clientOptions(server.port(), Milliseconds(5000)));
  testing::internal::CaptureStderr();
  std::string msg =
      expectThrows<Error>([&] { TCPStore c(clientOptions(server.port(), Milliseconds(5000))); });
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  expectMentions(msg, {"TCPStore at 127.0.0.1:" + std::to_string(server.port()),
                       "connection refused: 2 other connections are open, at the limit of 2",
                       "C10D_STORE_MAX_CONNECTIONS"});
  expectMentions(log, {"refused connection from 127.0.0.1:", "at the limit of 2"});
  // The others are unaffected, and a slot freed is a slot usable.
  b.set("k", "v");
  a.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server.numConnections() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(Milliseconds(5));
  }
  TCPStore c(clientOptions(server.port(), Milliseconds(5000)));
  EXPECT_EQ(c.getString("k"), "v");
}

// Past the limit a few connections are kept to be told why at their hello; a flood past those is
// closed at once, so it cannot hold descriptors for the whole handshake timeout.
TEST(TCPStoreLimitsTest, ConnectionFloodPastTheRefusalSlotsIsClosedAtOnce) {
  TCPStoreLimits l;
  l.maxConnections = 1;
  TCPStoreServer server(limited(l));
  TCPStore good(clientOptions(server.port(), Milliseconds(5000)));
  constexpr int kHeld = static_cast<int>(tcpstore::ServerCore::kRefusalSlots);
  std::vector<std::unique_ptr<test::RawClient>> silent;
  testing::internal::CaptureStderr();
  for (int i = 0; i < kHeld + 3; ++i) {
    silent.push_back(std::make_unique<test::RawClient>(server.port()));
    // One at a time, so the server has accepted each before the next.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.numConnections() < std::min(i + 2, kHeld + 1) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(Milliseconds(1));
    }
  }
  for (int i = kHeld; i < kHeld + 3; ++i) {
    EXPECT_TRUE(silent[i]->closedWithin(Milliseconds(10000))) << "connection " << i;
  }
  EXPECT_FALSE(silent[kHeld - 1]->closedWithin(Milliseconds(100)));  // held for its hello
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  expectMentions(log, {"connections are open, past the limit of 1 (maxConnections"});
  EXPECT_EQ(server.numConnections(), kHeld + 1);
  good.set("still", "served");
  EXPECT_EQ(good.getString("still"), "served");
}

TEST(TCPStoreLimitsTest, SettingsFromOptionsEnvironmentAndDefaults) {
  {
    const tcpstore::ServerConfig c = tcpstore::resolveServerConfig({});
    EXPECT_EQ(c.maxConnections, 65536);
    EXPECT_EQ(c.maxKeys, 1 << 20);
    EXPECT_EQ(c.maxValueBytes, 64 << 20);
    EXPECT_EQ(c.maxClientBytes, int64_t{4} << 30);
    EXPECT_EQ(c.maxTotalBytes, int64_t{16} << 30);
    EXPECT_EQ(c.handshakeTimeout, Milliseconds(30000));
  }
  ScopedEnv keys("C10D_STORE_MAX_KEYS", "2");
  ScopedEnv value("C10D_STORE_MAX_VALUE_BYTES", "1K");
  {
    TCPStoreServerOptions o;
    o.limits.maxKeys = 5;  // an explicit option wins over the environment
    const tcpstore::ServerConfig c = tcpstore::resolveServerConfig(o);
    EXPECT_EQ(c.maxKeys, 5);
    EXPECT_EQ(c.maxValueBytes, 1024);
    const std::string text = tcpstore::describeServerConfig(c);
    expectMentions(text, {"maxKeys=5 (C10D_STORE_MAX_KEYS; default 1048576)", "maxValueBytes=1024",
                          "secret=not set"});
  }
  // A server with no options takes the environment's limits.
  TCPStoreServer server("127.0.0.1", 0);
  TCPStore a(clientOptions(server.port()));
  a.set("k1", "1");
  a.set("k2", "2");
  expectThrows<InvalidArgument>([&] { a.set("k3", "3"); });
  expectThrows<InvalidArgument>([&] { a.set("k1", Bytes(1025, 0)); });
  {
    ScopedEnv bad("C10D_STORE_MAX_CONNECTIONS", "lots");
    const std::string msg =
        expectThrows<InvalidArgument>([] { tcpstore::resolveServerConfig({}); });
    expectMentions(msg, {"C10D_STORE_MAX_CONNECTIONS='lots'", "not an integer"});
  }
  {
    // The byte spellings of every other setting (c10d/base/settings.h): KiB, MiB, GiB, any case.
    ScopedEnv kib("C10D_STORE_MAX_VALUE_BYTES", "3KiB");
    ScopedEnv mib("C10D_STORE_MAX_TOTAL_BYTES", "5mib");
    const tcpstore::ServerConfig c = tcpstore::resolveServerConfig({});
    EXPECT_EQ(c.maxValueBytes, 3 * 1024);
    EXPECT_EQ(c.maxTotalBytes, 5 << 20);
  }
  {
    ScopedEnv bad("C10D_STORE_MAX_VALUE_BYTES", "2G");  // past the protocol's frame
    const std::string msg =
        expectThrows<InvalidArgument>([] { tcpstore::resolveServerConfig({}); });
    expectMentions(msg, {"C10D_STORE_MAX_VALUE_BYTES=2G", "out of range"});
  }
  {
    TCPStoreServerOptions o;
    o.limits.maxKeys = 0;
    const std::string msg =
        expectThrows<InvalidArgument>([&] { tcpstore::resolveServerConfig(o); });
    expectMentions(msg, {"maxKeys = 0", "out of range"});
  }
}

TEST(TCPStoreLimitsTest, ByteCounts) {
  struct Case {
    const char* text;
    bool ok;
    int64_t value;
  };
  const Case cases[] = {{"0", true, 0},
                        {"17", true, 17},
                        {"4K", true, 4096},
                        {"3m", true, 3 << 20},
                        {"2G", true, int64_t{2} << 30},
                        {"", false, 0},
                        {"K", false, 0},
                        {"1.5G", false, 0},
                        {"12KB", false, 0},
                        {"-1", false, 0},
                        {"9223372036854775807", true, INT64_MAX},
                        {"9223372036854775808", false, 0},
                        {"9007199254740992G", false, 0}};
  for (const auto& c : cases) {  // as the TCPStore reads its byte limits (c10d/base/settings.h)
    unsigned long long v = 0;
    EXPECT_EQ(parseByteSize(c.text, INT64_MAX, &v), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(static_cast<int64_t>(v), c.value) << c.text;
    }
  }
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
