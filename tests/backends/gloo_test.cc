// Gloo-specific tests (the shared behaviour is in the conformance suite): the configuration table,
// binding to an interface by name, what the backend reports it supports, aborting a posted recv,
// and a store that returns altered rendezvous values.
#include <cstdlib>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <thread>

#include <gloo/transport/tcp/address.h>

#include "c10d/backends/gloo/config.h"
#include "c10d/backends/gloo/socket_names.h"
#include "c10d/backends/gloo/store_adapter.h"
#include "c10d/base/abi.h"
#include "c10d/base/fd.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

// What a survivor matches a Gloo error against (socket_names.h): every socket of this process,
// the connected side's ephemeral port included, in Gloo's "[ip]:port" form.
TEST(GlooSocketNames, OwnSocketsListedAsGlooPrintsThem) {
  auto portOf = [](int fd, bool peer) {
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                        : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    EXPECT_EQ(rc, 0);
    return static_cast<int>(ntohs(a.sin_port));
  };
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(listener.valid());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  addr.sin_port = htons(static_cast<uint16_t>(portOf(listener.get(), false)));
  Fd client(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  Fd accepted(::accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(accepted.valid());

  using ::gloo::transport::tcp::Address;
  const std::vector<std::string> own = glooimpl::ownTcpAddresses();
  auto listed = [&](const std::string& a) {
    return std::find(own.begin(), own.end(), a) != own.end();
  };
  EXPECT_EQ(portOf(accepted.get(), true), portOf(client.get(), false));
  // What Gloo quotes: on the accepting side the connecting socket's address, on the connecting
  // side the listener's; both must be among this process's sockets as Gloo prints them.
  const std::string quotedByAcceptor = Address::fromPeerName(accepted.get()).str();
  const std::string quotedByConnector = Address::fromPeerName(client.get()).str();
  EXPECT_TRUE(listed(quotedByAcceptor)) << quotedByAcceptor << " not among our sockets";
  EXPECT_TRUE(listed(quotedByConnector)) << quotedByConnector << " not among our sockets";
  // Closed sockets leave the list: the client's address goes when the client closes.
  client.reset();
  const std::vector<std::string> after = glooimpl::ownTcpAddresses();
  EXPECT_EQ(std::count(after.begin(), after.end(), quotedByAcceptor), 0) << "after closing";
  EXPECT_EQ(std::count(after.begin(), after.end(), quotedByConnector), 2)  // listener + accepted
      << "after closing the client";

  EXPECT_TRUE(glooimpl::quotesAddress("Read error [127.0.0.1]:6364: Connection reset by peer",
                                      "[127.0.0.1]:6364"));
  EXPECT_TRUE(
      glooimpl::quotesAddress("Connection closed by peer [127.0.0.1]:6364", "[127.0.0.1]:6364"));
  EXPECT_FALSE(glooimpl::quotesAddress("Read error [127.0.0.1]:63640: Connection reset by peer",
                                       "[127.0.0.1]:6364"));
  EXPECT_TRUE(
      glooimpl::quotesAddress("[127.0.0.1]:63640 then [127.0.0.1]:6364 x", "[127.0.0.1]:6364"));
  EXPECT_FALSE(glooimpl::quotesAddress("anything", ""));
}

TEST(GlooConfig, DefaultsEnvironmentAndOptions) {
  ::unsetenv("C10D_SOCKET_IFNAME");
  ::unsetenv("C10D_GLOO_P2P_THREADS");
  GlooConfig d = parseGlooConfig({});
  EXPECT_EQ(d.ifname, "");
  EXPECT_EQ(d.maxP2pThreads, 64);
  ::setenv("C10D_SOCKET_IFNAME", "eth7", 1);
  EXPECT_EQ(parseGlooConfig({}).ifname, "eth7");
  EXPECT_EQ(parseGlooConfig({{"ifname", "lo"}}).ifname, "lo");  // options win over env
  ::unsetenv("C10D_SOCKET_IFNAME");
  EXPECT_EQ(parseGlooConfig({{"max_p2p_threads", "3"}}).maxP2pThreads, 3);
  EXPECT_THROW(parseGlooConfig({{"max_p2p_threads", "0"}}), InvalidArgument);
  EXPECT_THROW(parseGlooConfig({{"max_p2p_threads", "x"}}), InvalidArgument);
  try {
    parseGlooConfig({{"ifnam", "lo"}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ifnam"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ifname"), std::string::npos) << e.what();
  }
  const std::string table = describeGlooConfig(d);
  for (const auto& e : glooSettings().rows()) {
    EXPECT_NE(table.find("gloo." + e.key + " = "), std::string::npos) << table;
    EXPECT_NE(table.find(e.env), std::string::npos) << table;
  }
}

TEST(GlooConfig, BindAddressFollowsMasterAddr) {
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  EXPECT_EQ(defaultGlooBindAddress(), "127.0.0.1");
  ::unsetenv("MASTER_ADDR");
  EXPECT_FALSE(defaultGlooBindAddress().empty());
}

TEST(GlooBackend, RegisteredAndSupportsEveryDefinedOpOnCpuOnly) {
  ASSERT_TRUE(isBackendRegistered("gloo"));
  EXPECT_EQ(backendInfo("gloo").priority, 10);
  const std::string path = uniqueTempPath("gloo-supports");
  expectAllRanksOk(1, [&](int rank, int size) {
    auto pg = makeGroup(conformanceBackends()[0], path, rank, size);
    EXPECT_EQ(pg->backendName(), "gloo");
    EXPECT_FALSE(pg->supportsDevice(Device::cuda(0)));
    for (DataType dt : allDataTypes()) {
      for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
        auto op = static_cast<ReduceOp::Kind>(k);
        EXPECT_EQ(pg->supports(op, dt, Device::cpu()), isDefined(op, dt));
        EXPECT_FALSE(pg->supports(op, dt, Device::cuda(0)));
      }
    }
  });
}

TEST(GlooBackend, BindsToInterfaceByName) {
  const std::string path = uniqueTempPath("gloo-ifname");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto store = std::make_shared<FileStore>(path, size, Milliseconds(30000));
    ProcessGroup::Options o;
    o.timeout = Milliseconds(30000);
    o.config["ifname"] = "lo";
    auto pg = createProcessGroup("gloo", store, rank, size, o);
    int64_t v = rank + 1;
    pg->allreduce(tensorOf(&v, 1))->wait();
    EXPECT_EQ(v, 3);
  });
}

// Work::abort() on a posted recv wakes its waiter thread, which then finishes the continuation; the
// Work must still fail with "aborted" (it once could report success for data that never came).
// Many recvs make the race between the two finishes show if it is there.
TEST(GlooBackend, AbortedRecvFailsNeverSucceeds) {
  const std::string path = uniqueTempPath("gloo-abort");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto store = std::make_shared<FileStore>(path, size, Milliseconds(30000));
    ProcessGroup::Options o;
    o.timeout = Milliseconds(30000);
    auto pg = createProcessGroup("gloo", store, rank, size, o);
    // Gloo cannot withdraw a posted recv: the buffers outlive the group.
    std::vector<int32_t> bufs(64, -1);
    for (size_t i = 0; i < bufs.size(); ++i) {
      std::shared_ptr<Work> w;
      if (rank == 0) {
        SendRecvOptions ro;
        ro.tag = 100 + static_cast<int>(i);  // nobody sends these
        w = pg->recv(tensorOf(&bufs[i], 1), 1, ro);
      }
      // Issued after the recv, the barrier completes after the worker posted it: its waiter
      // thread is waiting when abort() wakes it.
      pg->barrier()->wait();
      if (rank != 0) continue;
      w->abort();
      ASSERT_TRUE(w->isCompleted()) << "recv #" << i;
      ASSERT_FALSE(w->isSuccess()) << "aborted recv #" << i << " reported success";
      try {
        std::rethrow_exception(w->exception());
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
      }
    }
    pg->barrier()->wait();  // the group still works
    pg.reset();
    for (int32_t v : bufs) EXPECT_EQ(v, -1);
  });
}

// Gloo parses the rendezvous values it reads back without bounds checks (Gloo 2023's tcp::Rank
// crashed on an empty one, found by the c10d_api fuzzer's lying host store on Debian 13): the
// adapter frames what it writes and refuses, naming the key, what is not such a frame.
TEST(GlooStoreAdapter, RoundTripsAndRefusesAlteredValues) {
  auto raw = std::make_shared<HashStore>(Milliseconds(2000));
  GlooStoreAdapter adapter(raw, Milliseconds(2000));
  for (const std::string& v : {std::string(), std::string("x"), std::string(300, '\0')}) {
    adapter.set("k", std::vector<char>(v.begin(), v.end()));
    EXPECT_EQ(adapter.get("k"), std::vector<char>(v.begin(), v.end())) << v.size() << " bytes";
  }
  adapter.set("k", std::vector<char>{'a', 'b', 'c', 'd'});
  const Bytes good = raw->get("k");
  auto expectRefused = [&](const Bytes& stored, const char* why) {
    raw->set("k", stored);
    try {
      adapter.get("k");
      ADD_FAILURE() << why << ": accepted";
    } catch (const CommError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("malformed rendezvous value for key 'k'"), std::string::npos) << m;
      EXPECT_NE(m.find(why), std::string::npos) << m;
    }
  };
  expectRefused(Bytes(), "not a value this library wrote");
  expectRefused(toBytes("what another program wrote there"), "not a value this library wrote");
  expectRefused(Bytes(good.begin(), good.end() - 1), "length field");
  Bytes longer = good;
  longer.push_back('e');
  expectRefused(longer, "length field");
  Bytes flipped = good;
  flipped.back() ^= 1;
  expectRefused(flipped, "checksum");
}

// A store that loses part of every value Gloo's rendezvous reads back (every get but the join
// keys our own connect() reads): group creation fails with an error naming the key; it must not
// crash inside Gloo.
class TruncatingStore : public HashStore {
 public:
  using HashStore::HashStore;
  Bytes get(const std::string& key) override {
    Bytes v = HashStore::get(key);
    if (key.find("/join/") == std::string::npos) v.resize(v.size() / 2);
    return v;
  }
};

TEST(GlooBackend, AStoreThatAltersRendezvousValuesIsAnErrorNotACrash) {
  // Two ranks as threads over one store (Gloo 0.5 reads nothing back in a group of one). The rank
  // that reads an altered value names it; its peer, left waiting for it, times out.
  auto store = std::make_shared<TruncatingStore>(Milliseconds(2000));
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      ProcessGroup::Options o;
      o.timeout = Milliseconds(2000);
      try {
        createProcessGroup("gloo", store, r, 2, o);
        errors[r] = "no error: a group was made over a store that truncates what Gloo reads";
      } catch (const CommError& e) {
        errors[r] = e.what();
      } catch (const TimeoutError& e) {
        errors[r] = e.what();
      } catch (const std::exception& e) {
        errors[r] = std::string("neither a CommError nor a TimeoutError: ") + e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  int named = 0;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + errors[r]);
    EXPECT_EQ(errors[r].find("no error"), std::string::npos);
    EXPECT_EQ(errors[r].find("neither"), std::string::npos);
    if (errors[r].find("malformed rendezvous value for key '") != std::string::npos) ++named;
  }
  EXPECT_GE(named, 1) << errors[0] << "\n" << errors[1];
}

TEST(GlooBackend, ARankThatJoinsButNeverConnectsIsNamedByItsPeers) {
  // Ranks 0 and 1 (threads) and a rank 2 that joins the group and then stops: it never publishes
  // the address record Gloo's full mesh waits for. Both live ranks must time out naming rank 2 and
  // their group, not only a store key.
  auto store = std::make_shared<HashStore>(Milliseconds(1500));
  store->add("gloo/instances/rank2", 1);
  store->set("gloo/1/join/2", Bytes{'1'});
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      ProcessGroup::Options o;
      o.timeout = Milliseconds(1500);
      o.groupName = "stalled_mesh";
      try {
        createProcessGroup("gloo", store, r, 3, o);
        errors[r] = "no error: a group of 3 connected without rank 2";
      } catch (const TimeoutError& e) {
        errors[r] = e.what();
      } catch (const std::exception& e) {
        errors[r] = std::string("not a TimeoutError: ") + e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + errors[r]);
    EXPECT_NE(
        errors[r].find("gloo: rank " + std::to_string(r) + " of group gloo:stalled_mesh (size 3)"),
        std::string::npos);
    EXPECT_NE(errors[r].find("rank 2 never published its Gloo address record"), std::string::npos);
    EXPECT_NE(errors[r].find("key 'gloo/1/"), std::string::npos);
  }
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
