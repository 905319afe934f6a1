// Where rank 0's TCPStore listens: loopback for a single-host job (so it cannot be reached from
// another interface), the MASTER_ADDR interface, every interface only when nothing narrower is
// known to work; C10D_STORE_BIND overrides.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/socket.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "tests/store/tcp_store_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using test::ScopedEnv;

// An IPv4 address of this host other than loopback ("" when it has none).
std::string nonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char buf[INET_ADDRSTRLEN];
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf)) != nullptr) found = buf;
  }
  freeifaddrs(list);
  return found;
}

// Whether a TCP connection to host:port is accepted (one attempt, no retry).
bool reachable(const std::string& host, uint16_t port) {
  try {
    net::connectTo(host, port, Milliseconds(2000), /*retry=*/false);
    return true;
  } catch (const CommError&) {
    return false;
  }
}

// The numeric address of the peer of an accepted socket, without its port.
std::string peerHost(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  char buf[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return buf;
}

// Accepts one connection on a non-blocking listener within a few seconds.
net::Fd acceptOne(int listenFd) {
  for (int i = 0; i < 500; ++i) {
    int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return net::Fd(fd);
    usleep(10000);
  }
  ADD_FAILURE() << "no connection accepted";
  return net::Fd();
}

// connectTo with a source address: the server sees the connection come from it (the loopback
// spreading that store_perf uses to get past one address's ephemeral ports).
TEST(TCPStoreBindTest, ConnectFromSourceAddress) {
  net::Fd listener = net::listenOn("127.0.0.1", 0, 16);
  const uint16_t port = net::localPort(listener.get());
  for (const char* source : {"127.0.0.2", "127.0.0.3"}) {
    net::Fd client = net::connectTo("127.0.0.1", port, Milliseconds(5000), true, source);
    net::Fd served = acceptOne(listener.get());
    EXPECT_EQ(peerHost(served.get()), source);
  }
  // Without one, the kernel's choice (127.0.0.1 towards 127.0.0.1).
  net::Fd client = net::connectTo("127.0.0.1", port, Milliseconds(5000));
  net::Fd served = acceptOne(listener.get());
  EXPECT_EQ(peerHost(served.get()), "127.0.0.1");
}

// The message of the E that connecting to 127.0.0.1:port from `source` throws ("" if it connects).
template <typename E>
std::string connectError(uint16_t port, const char* source, Milliseconds timeout) {
  try {
    net::connectTo("127.0.0.1", port, timeout, true, source);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(TCPStoreBindTest, BadSourceAddressIsNamed) {
  net::Fd listener = net::listenOn("127.0.0.1", 0, 16);
  const uint16_t port = net::localPort(listener.get());
  std::string e = connectError<InvalidArgument>(port, "not-an-address", Milliseconds(1000));
  EXPECT_NE(e.find("source address 'not-an-address'"), std::string::npos) << e;
  // An address this host does not have (TEST-NET-3): bind fails, and the error says from where.
  e = connectError<TimeoutError>(port, "203.0.113.7", Milliseconds(300));
  EXPECT_NE(e.find("from source address 203.0.113.7"), std::string::npos) << e;
  // An IPv6 source for an IPv4 server: no address of the server's family to connect from.
  e = connectError<TimeoutError>(port, "::1", Milliseconds(300));
  EXPECT_NE(e.find("source address ::1 is not of the family of 127.0.0.1"), std::string::npos) << e;
}

// TCPStoreOptions::sourceAddress reaches the client's socket.
TEST(TCPStoreBindTest, StoreClientConnectsFromSourceAddress) {
  TCPStoreOptions so;
  so.host = "127.0.0.1";
  so.bindAddress = "127.0.0.1";
  so.port = 0;
  so.isServer = true;
  so.timeout = Milliseconds(10000);
  TCPStore server(so);
  TCPStoreOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.sourceAddress = "127.0.0.4";
  o.timeout = Milliseconds(10000);
  TCPStore client(o);
  client.set("k", "v");
  EXPECT_EQ(toString(server.get("k")), "v");

  // Who the server sees: a listener of ours stands in for it.
  net::Fd listener = net::listenOn("127.0.0.1", 0, 16);
  o.port = net::localPort(listener.get());
  o.timeout = Milliseconds(2000);
  std::string seen;
  std::thread t([&] {
    net::Fd served = acceptOne(listener.get());
    seen = peerHost(served.get());
  });  // closing without a hello fails the client's handshake
  EXPECT_THROW(TCPStore{o}, Error);
  t.join();
  EXPECT_EQ(seen, "127.0.0.4");
}

// net::routeTo: the local end of the route to a host (what verbs advertises and gloo binds to
// when MASTER_ADDR is set).
TEST(TCPStoreBindTest, RouteToNamesTheLocalAddressTowardsAHost) {
  EXPECT_EQ(net::routeTo("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(net::routeTo("127.0.0.1", AF_INET), "127.0.0.1");
  EXPECT_EQ(net::routeTo("127.3.4.5", AF_INET), "127.0.0.1");  // all of 127/8 is lo
  EXPECT_EQ(net::routeTo("no-such-host.invalid"), "");
  EXPECT_EQ(net::routeTo("::1", AF_INET), "");  // no IPv4 address for it
}

TEST(TCPStoreBindTest, ChoiceFollowsMasterAddr) {
  ScopedEnv unsetBind(tcpstore::kBindEnv, nullptr);
  using tcpstore::chooseBindAddress;
  EXPECT_EQ(chooseBindAddress("127.0.0.1", false).address, "127.0.0.1");
  EXPECT_EQ(chooseBindAddress("127.0.0.2", false).address, "127.0.0.2");
  EXPECT_EQ(chooseBindAddress("localhost", false).address, "localhost");
  EXPECT_EQ(chooseBindAddress("::1", false).address, "::1");
  // Not an address of this host (TEST-NET-3): only every interface can work.
  EXPECT_EQ(chooseBindAddress("203.0.113.7", false).address, "");
  EXPECT_EQ(chooseBindAddress("no-such-host.invalid", false).address, "");
  const std::string mine = nonLoopbackAddress();
  if (!mine.empty()) {
    EXPECT_EQ(chooseBindAddress(mine, false).address, mine);
  }
  // A name that resolves to loopback here (Debian maps the host name to 127.0.1.1) may name this
  // host's real address on the others: loopback only when the job is known to be single-host.
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const tcpstore::BindChoice single = chooseBindAddress(host, true);
  const tcpstore::BindChoice multi = chooseBindAddress(host, false);
  if (multi.reason.find("resolves to loopback") != std::string::npos) {
    EXPECT_EQ(single.address, host);
    EXPECT_EQ(multi.address, "");
  }
  {
    ScopedEnv bind(tcpstore::kBindEnv, "*");
    EXPECT_EQ(chooseBindAddress("127.0.0.1", true).address, "");
  }
  {
    ScopedEnv bind(tcpstore::kBindEnv, "127.0.0.1");
    EXPECT_EQ(chooseBindAddress("203.0.113.7", false).address, "127.0.0.1");
  }
}

// The standalone case end to end: env:// with MASTER_ADDR=127.0.0.1 (what c10drun --standalone
// passes) gives a store bound to loopback, which a connection to this host's other address does
// not reach; with C10D_STORE_BIND=* (the control) the same connection does.
TEST(TCPStoreBindTest, StandaloneStoreIsNotReachableFromAnotherInterface) {
  const std::string other = nonLoopbackAddress();
  if (other.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address to try";
  ScopedEnv addr("MASTER_ADDR", "127.0.0.1");
  ScopedEnv secret(tcpstore::kSecretEnv, nullptr);
  ScopedEnv world("LOCAL_WORLD_SIZE", nullptr);
  for (const char* bind : {static_cast<const char*>(nullptr), "*"}) {
    SCOPED_TRACE(bind ? "C10D_STORE_BIND=*" : "C10D_STORE_BIND unset");
    ScopedEnv b(tcpstore::kBindEnv, bind);
    uint16_t port = 0;
    {
      net::Fd probe = net::listenOn("127.0.0.1", 0, 1);
      port = net::localPort(probe.get());
    }
    ScopedEnv p("MASTER_PORT", std::to_string(port).c_str());
    testing::internal::CaptureStderr();
    Rendezvous rv = rendezvous("env://", 0, 1, Milliseconds(10000));
    const std::string log = testing::internal::GetCapturedStderr();
    auto* store = dynamic_cast<TCPStore*>(rv.store.get());
    ASSERT_NE(store, nullptr);
    ASSERT_NE(store->server(), nullptr);
    EXPECT_TRUE(reachable("127.0.0.1", port));
    if (bind == nullptr) {
      EXPECT_EQ(store->server()->boundAddress(), "127.0.0.1:" + std::to_string(port));
      EXPECT_FALSE(reachable(other, port)) << "loopback-only store reached through " << other;
      EXPECT_EQ(log, "");
    } else {
      EXPECT_TRUE(reachable(other, port)) << "the control: every interface, through " << other;
      // Every interface without a secret: rank 0 says so, once.
      EXPECT_NE(log.find("listens on every interface (C10D_STORE_BIND=*) without authentication"),
                std::string::npos)
          << log;
    }
  }
}

// A multi-host job whose MASTER_ADDR is this host's real address binds that interface only.
TEST(TCPStoreBindTest, MasterAddrInterfaceOnly) {
  const std::string mine = nonLoopbackAddress();
  if (mine.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address";
  ScopedEnv unsetBind(tcpstore::kBindEnv, nullptr);
  ScopedEnv secret(tcpstore::kSecretEnv, "bind-test-secret");
  TCPStoreOptions o;
  o.host = mine;
  o.port = 0;
  o.isServer = true;
  o.bindAddress = tcpstore::chooseBindAddress(mine, false).address;
  o.timeout = Milliseconds(10000);
  TCPStore store(o);
  EXPECT_EQ(store.server()->boundAddress(), mine + ":" + std::to_string(store.port()));
  EXPECT_TRUE(reachable(mine, store.port()));
  EXPECT_FALSE(reachable("127.0.0.1", store.port()));
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
