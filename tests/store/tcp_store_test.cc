// TCPStore-specific behaviour: ports and bind errors, connect retry and timeouts, pushed wakeups,
// malformed requests, server death, many clients, large values and the batched ops. The generic
// Store semantics are covered by store_conformance_test.
#include "c10d/store/tcp/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/socket.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_protocol.h"
#include "tests/common/multiproc.h"
#include "tests/store/tcp_store_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using test::clientOptions;
using test::expectThrows;

int64_t msSince(Clock::time_point t) {
  return duration_cast<Milliseconds>(Clock::now() - t).count();
}

// A port nobody listens on right now (bound then released).
uint16_t freePort() {
  net::Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return net::localPort(fd.get());
}

TEST(TCPStoreTest, PortZeroPicksAFreePort) {
  TCPStoreOptions o = clientOptions(0);
  o.isServer = true;
  TCPStore server(o);
  ASSERT_NE(server.port(), 0);
  ASSERT_NE(server.server(), nullptr);
  EXPECT_EQ(server.server()->port(), server.port());
  TCPStore client(clientOptions(server.port()));
  client.set("k", "v");
  EXPECT_EQ(server.getString("k"), "v");
}

TEST(TCPStoreTest, BindFailureNamesHostPortAndErrno) {
  TCPStoreServer first("", 0);
  const std::string port = std::to_string(first.port());
  std::string msg = expectThrows<Error>([&] { TCPStoreServer second("", first.port()); });
  EXPECT_NE(msg.find("port " + port), std::string::npos) << msg;
  EXPECT_NE(msg.find("EADDRINUSE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.0.0.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("port 0"), std::string::npos) << msg;  // what to do

  TCPStoreServer third("127.0.0.1", 0);
  msg = expectThrows<Error>([&] { TCPStoreServer fourth("127.0.0.1", third.port()); });
  EXPECT_NE(msg.find("port " + std::to_string(third.port()) + " on 127.0.0.1"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("EADDRINUSE"), std::string::npos) << msg;

  TCPStoreOptions o = clientOptions(first.port());
  o.isServer = true;
  msg = expectThrows<Error>([&] { TCPStore store(o); });
  EXPECT_NE(msg.find("EADDRINUSE"), std::string::npos) << msg;
}

TEST(TCPStoreTest, ClientRetriesUntilALateServerStarts) {
  const uint16_t port = freePort();
  std::string error;
  int64_t connectedAfter = -1;
  const auto start = Clock::now();
  std::thread client([&] {
    try {
      TCPStore store(clientOptions(port, Milliseconds(10000)));
      connectedAfter = msSince(start);
      store.set("late", "ok");
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(Milliseconds(300));
  TCPStoreServer server("", port);
  client.join();
  EXPECT_EQ(error, "");
  EXPECT_GE(connectedAfter, 290);
  EXPECT_LT(connectedAfter, 3000);
  TCPStore check(clientOptions(port));
  EXPECT_EQ(check.getString("late"), "ok");
}

TEST(TCPStoreTest, ConnectTimeoutNamesHostAndPort) {
  const uint16_t port = freePort();
  const auto start = Clock::now();
  std::string msg =
      expectThrows<TimeoutError>([&] { TCPStore store(clientOptions(port, Milliseconds(300))); });
  EXPECT_GE(msSince(start), 290);
  EXPECT_LT(msSince(start), 3000);
  EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
  EXPECT_NE(msg.find("ECONNREFUSED"), std::string::npos) << msg;
}

TEST(TCPStoreTest, TimeoutNamesKeyAndLaterCallsStillWork) {
  TCPStoreServer server;
  TCPStore store(clientOptions(server.port()));
  store.setTimeout(Milliseconds(150));
  const auto start = Clock::now();
  std::string msg = expectThrows<TimeoutError>([&] { store.get("missing-key"); });
  EXPECT_GE(msSince(start), 140);
  EXPECT_NE(msg.find("missing-key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("150 ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << msg;
  msg = expectThrows<TimeoutError>([&] { store.wait({"w1", "w2"}, Milliseconds(50)); });
  EXPECT_NE(msg.find("'w2'"), std::string::npos) << msg;
  // The connection was dropped and is re-made; the abandoned get must not answer this one.
  store.set("missing-key", "late");
  EXPECT_EQ(store.add("counter", 5), 5);
  EXPECT_EQ(store.getString("missing-key"), "late");
  EXPECT_EQ(server.numWorkers(), 1);  // reconnects are not new workers
}

// Reads the port a server process published with publishPort (waits for it up to 30 s).
uint16_t readPort(const std::string& file) {
  const auto deadline = Clock::now() + Milliseconds(30000);
  uint16_t port = 0;
  while (port == 0 && Clock::now() < deadline) {
    std::ifstream(file) >> port;
    if (port == 0) std::this_thread::sleep_for(Milliseconds(5));
  }
  return port;
}

void publishPort(const std::string& file, uint16_t port) {
  std::ofstream(file + ".tmp") << port;
  std::rename((file + ".tmp").c_str(), file.c_str());
}

// Runs `clients` client processes against a TCPStore server in a process of its own (rank 0), so
// that the test process forks while it has no threads (fork from a threaded process can deadlock
// under TSan). Ranks 1..clients run fn(rank, store); once all are done the server rank runs
// check(store) on its own store.
void runAgainstServerProcess(int clients, const std::function<void(int, TCPStore&)>& fn,
                             const std::function<void(TCPStore&)>& check, Milliseconds timeout) {
  const std::string portFile = test::uniqueTempPath("tcpstore-port");
  test::MultiProcOptions opts;
  opts.timeout = timeout;
  test::expectAllRanksOk(
      clients + 1,
      [&](int rank, int size) {
        if (rank == 0) {
          TCPStoreOptions o = clientOptions(0, timeout);
          o.isServer = true;
          TCPStore server(o);
          publishPort(portFile, server.port());
          server.wait({"clients-done"});
          check(server);
          return;
        }
        TCPStore store(clientOptions(readPort(portFile), timeout));
        fn(rank, store);
        if (store.add("clients-finished", 1) == size - 1) store.set("clients-done", "1");
      },
      opts);
  std::remove(portFile.c_str());
}

TEST(TCPStoreTest, WaitIsPushedNotPolled) {
  constexpr int kRounds = 5;
  runAgainstServerProcess(
      2,
      [](int rank, TCPStore& store) {
        int64_t bestMs = 1 << 30;
        for (int round = 0; round < kRounds; ++round) {
          const std::string key = "go" + std::to_string(round);
          if (rank == 1) {
            store.set("parked" + key, "1");
            store.wait({key});
            const int64_t now = Clock::now().time_since_epoch().count();
            const int64_t sent = std::stoll(store.getString("t" + key));
            bestMs = std::min<int64_t>(bestMs, (now - sent) / 1000000);
          } else {
            store.wait({"parked" + key});
            std::this_thread::sleep_for(Milliseconds(150));  // the waiter is parked on the server
            store.set("t" + key, std::to_string(Clock::now().time_since_epoch().count()));
            store.set(key, "x");
          }
        }
        // steady_clock is CLOCK_MONOTONIC, shared by the processes. Polling would show its
        // interval.
        if (rank == 1) {
          EXPECT_LT(bestMs, 20) << "best wake-up latency " << bestMs << " ms";
        }
      },
      [](TCPStore&) {}, Milliseconds(60000));
}

// A hello frame of this protocol version, without a secret.
std::vector<uint8_t> helloFrame(const tcpstore::Nonce& nonce) {
  tcpstore::FrameWriter w(static_cast<uint8_t>(tcpstore::Op::kHello));
  w.u32(tcpstore::kMagic);
  w.u32(tcpstore::kVersion);
  w.u8(0);
  w.u8(0);
  w.raw(nonce.data(), nonce.size());
  return w.finish();
}

// Opens a raw socket to the server, (by default) runs the handshake, sends `bytes`, optionally
// half-closes, and expects the server to close the connection within 10 s. Returns the local
// "ip:port" of the raw socket.
std::string sendAndExpectClose(uint16_t port, const std::vector<uint8_t>& bytes, bool shutdownWrite,
                               bool handshake = true) {
  net::Fd fd = net::connectTo("127.0.0.1", port, Milliseconds(5000));
  if (handshake) {
    // A hello without a secret, and its 2-byte "ok, no authentication" reply.
    tcpstore::Nonce nonce{};
    const auto hello = helloFrame(nonce);
    EXPECT_EQ(send(fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(hello.size()));
    uint8_t reply[6];
    pollfd p{fd.get(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 10000), 1);
    EXPECT_EQ(recv(fd.get(), reply, sizeof(reply), MSG_WAITALL), 6);
    EXPECT_EQ(reply[0], 2);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  const std::string self = net::formatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close before everything is sent
    off += static_cast<size_t>(n);
  }
  if (shutdownWrite) shutdown(fd.get(), SHUT_WR);
  const auto deadline = Clock::now() + Milliseconds(10000);
  char buf[256];
  while (Clock::now() < deadline) {
    ssize_t n = recv(fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return self;
    EXPECT_FALSE(n > 0) << "server answered a malformed request";
    std::this_thread::sleep_for(Milliseconds(2));
  }
  ADD_FAILURE() << "server did not close the connection of " << self;
  return self;
}

std::vector<uint8_t> le32(uint32_t v) {
  return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 24)};
}

TEST(TCPStoreTest, MalformedRequestsCloseOnlyThatClient) {
  TCPStoreServer server;
  const uint16_t port = server.port();
  TCPStore good(clientOptions(port));
  TCPStore waiter(clientOptions(port));
  std::thread parked([&] { EXPECT_EQ(waiter.getString("after"), "done"); });

  std::mt19937 rng(42);
  std::vector<uint8_t> garbage(4096);
  for (auto& b : garbage) b = static_cast<uint8_t>(rng());
  garbage[3] = 0xAB;  // a length prefix far past the maximum
  std::vector<uint8_t> oversized = le32(0x7fffffff);
  oversized.push_back(2);
  std::vector<uint8_t> truncated = le32(9);  // set: key length 100 in a 9-byte frame
  truncated.push_back(2);
  for (uint8_t b : le32(100)) truncated.push_back(b);
  for (uint8_t b : le32(0)) truncated.push_back(b);
  std::vector<uint8_t> unknownOp = le32(1);
  unknownOp.push_back(200);
  std::vector<uint8_t> halfFrame = le32(64);
  halfFrame.resize(20, 'x');

  std::vector<uint8_t> secondHello = helloFrame(tcpstore::Nonce{});

  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    bool shutdownWrite;
    bool handshake;  // first (else the bytes are what the server gets instead of a hello)
    const char* logged;
  };
  const Case cases[] = {
      {"garbage", garbage, false, true, "frame length"},
      {"oversized", oversized, false, true, "frame length 2147483647"},
      {"truncated", truncated, false, true, "malformed set"},
      {"unknown op", unknownOp, false, true, "unknown op 200"},
      {"half frame", halfFrame, true, true, "middle of a frame"},
      {"second hello", secondHello, false, true, "a second hello after the handshake"},
      {"garbage instead of a hello", garbage, false, false, "handshake frame length"},
      {"request instead of a hello", truncated, false, false,
       "set request (op 2) where the handshake expects hello"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    testing::internal::CaptureStderr();
    const std::string self = sendAndExpectClose(port, c.bytes, c.shutdownWrite, c.handshake);
    std::this_thread::sleep_for(Milliseconds(20));
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find(self), std::string::npos) << log;
    EXPECT_NE(log.find(c.logged), std::string::npos) << log;
    EXPECT_EQ(good.add("alive", 1), static_cast<int64_t>(&c - cases) + 1);
  }
  good.set("after", "done");
  parked.join();
  EXPECT_EQ(server.numConnections(), 2);
}

// Frames with valid lengths and random bodies (every op, random field lengths): whatever the
// server makes of them, it must not crash, leak parked requests or stop serving others.
TEST(TCPStoreTest, RandomFramesNeverBreakTheServer) {
  TCPStoreServer server;
  TCPStore good(clientOptions(server.port()));
  std::mt19937 rng(1234);
  testing::internal::CaptureStderr();  // the server logs each malformed frame
  for (int i = 0; i < 200; ++i) {
    net::Fd fd = net::connectTo("127.0.0.1", server.port(), Milliseconds(5000));
    // Past the handshake for most connections (the random frames then reach every request),
    // instead of a hello for the rest.
    std::vector<uint8_t> frames;
    if (i % 4 != 0) frames = helloFrame(tcpstore::Nonce{});
    for (int f = 0; f < 3; ++f) {
      const uint32_t len = 1 + rng() % 40;
      for (uint8_t b : le32(len)) frames.push_back(b);
      frames.push_back(static_cast<uint8_t>(1 + rng() % 14));  // ops 1..13 and one unknown
      for (uint32_t k = 1; k < len; ++k) {
        // Small bytes make plausible field lengths.
        frames.push_back(static_cast<uint8_t>(rng() % 3 == 0 ? rng() : rng() % 4));
      }
    }
    ssize_t n = send(fd.get(), frames.data(), frames.size(), MSG_NOSIGNAL);
    (void)n;
  }
  EXPECT_EQ(good.add("still-alive", 1), 1);
  const auto deadline = Clock::now() + Milliseconds(10000);
  while (server.numConnections() > 1 && Clock::now() < deadline) {
    std::this_thread::sleep_for(Milliseconds(5));
  }
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(server.numConnections(), 1);
  good.set("k", "v");
  EXPECT_EQ(good.getString("k"), "v");
}

TEST(TCPStoreTest, ServerDeathGivesCommErrorNotAHang) {
  const std::string portFile = test::uniqueTempPath("tcpstore-port");
  auto results = test::runRanks(2, [&](int rank, int) {
    if (rank == 0) {
      TCPStoreOptions o = clientOptions(0);
      o.isServer = true;
      TCPStore server(o);
      publishPort(portFile, server.port());
      server.wait({"client-waiting"});
      std::this_thread::sleep_for(Milliseconds(100));
      _exit(0);  // dies without any goodbye
    }
    const uint16_t port = readPort(portFile);
    TCPStore store(clientOptions(port));
    store.set("client-waiting", "1");
    const auto start = Clock::now();
    const std::string where =
        "connection to TCPStore at 127.0.0.1:" + std::to_string(port) + " lost";
    std::string msg = expectThrows<CommError>([&] { store.wait({"never"}); });
    EXPECT_LT(msSince(start), 5000);
    EXPECT_NE(msg.find(where), std::string::npos) << msg;
    // Later calls fail fast too.
    msg = expectThrows<CommError>([&] { store.set("x", "y"); });
    EXPECT_NE(msg.find("reconnecting for set of key 'x' failed"), std::string::npos) << msg;
  });
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.describe();
  std::remove(portFile.c_str());
}

TEST(TCPStoreTest, DestroyingTheServerStoreWakesClients) {
  TCPStoreOptions o = clientOptions(0);
  o.isServer = true;
  auto server = std::make_unique<TCPStore>(o);
  const uint16_t port = server->port();
  TCPStore client(clientOptions(port));
  std::string msg;
  std::thread waiter([&] { msg = expectThrows<CommError>([&] { client.get("never"); }); });
  std::this_thread::sleep_for(Milliseconds(50));
  server.reset();
  waiter.join();
  // Names the server, says the connection is lost, and which call was waiting.
  EXPECT_NE(msg.find("connection to TCPStore at 127.0.0.1:" + std::to_string(port) + " lost"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("get"), std::string::npos) << msg;
}

TEST(TCPStoreTest, SixtyFourProcessesAddExactly) {
  constexpr int kProcs = 64;
  constexpr int kAdds = 1000;
  runAgainstServerProcess(
      kProcs,
      [](int, TCPStore& store) {
        for (int i = 0; i < kAdds; ++i) store.add("counter", 1);
      },
      [](TCPStore& server) {
        EXPECT_EQ(server.add("counter", 0), kProcs * kAdds);
        EXPECT_EQ(server.server()->numWorkers(), kProcs + 1);
      },
      Milliseconds(100000));
}

TEST(TCPStoreTest, SixteenMiBValueRoundTrips) {
  TCPStoreServer server;
  TCPStore a(clientOptions(server.port()));
  TCPStore b(clientOptions(server.port()));
  Bytes big(16 << 20);
  std::mt19937 rng(7);
  for (auto& x : big) x = static_cast<uint8_t>(rng() % 4);        // plenty of NUL bytes
  std::thread getter([&] { EXPECT_TRUE(b.get("big") == big); });  // parked, pushed 16 MiB
  a.set("big", big);
  getter.join();
  EXPECT_TRUE(a.get("big") == big);
  a.append("big", Bytes{0, 1});
  EXPECT_EQ(b.get("big").size(), big.size() + 2);
  Bytes tooBig((65 << 20) + 1);
  expectThrows<InvalidArgument>([&] { a.set("huge", tooBig); });
  EXPECT_EQ(a.getString("big").size(), big.size() + 2);  // still usable
}

TEST(TCPStoreTest, MultiGetAndMultiSetAreBatched) {
  TCPStoreServer server;
  TCPStore a(clientOptions(server.port()));
  TCPStore b(clientOptions(server.port()));
  a.multiSet({"m1", "m2", "m3"}, {toBytes("one"), Bytes{0, 0}, Bytes{}});
  auto values = b.multiGet({"m3", "m1", "m2"});
  ASSERT_EQ(values.size(), 3u);
  EXPECT_TRUE(values[0].empty());
  EXPECT_EQ(toString(values[1]), "one");
  EXPECT_EQ(values[2], (Bytes{0, 0}));
  EXPECT_TRUE(b.multiGet({}).empty());
  // multiGet waits for missing keys, and is answered once all of them exist.
  std::thread getter([&] {
    auto v = b.multiGet({"later1", "m1", "later2"});
    EXPECT_EQ(toString(v[0]), "L1");
    EXPECT_EQ(toString(v[2]), "L2");
  });
  std::this_thread::sleep_for(Milliseconds(30));
  a.set("later1", "L1");
  a.multiSet({"later2"}, {toBytes("L2")});
  getter.join();
  expectThrows<InvalidArgument>([&] { a.multiSet({"a", "b"}, {toBytes("1")}); });
  EXPECT_EQ(a.getNumKeys(), 5);
}

// A multiGet naming one 8 MiB key ten times asks for an 80 MiB reply, past the frame limit that
// bounds requests: the server answers with an error instead of building it, and stays usable.
TEST(TCPStoreTest, MultiGetReplyPastTheFrameLimitIsRefused) {
  TCPStoreServer server;
  TCPStore a(clientOptions(server.port()));
  a.set("big", Bytes(8 << 20, 1));
  const std::vector<std::string> keys(10, "big");
  const std::string msg = expectThrows<InvalidArgument>([&] { a.multiGet(keys); });
  const uint64_t replyBytes = 1 + 4 + 10 * (4 + (8u << 20));
  EXPECT_NE(msg.find(std::to_string(replyBytes)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(tcpstore::kMaxFrameBytes)), std::string::npos) << msg;
  EXPECT_NE(msg.find("multiGet"), std::string::npos) << msg;
  EXPECT_EQ(a.multiGet({"big", "big"}).size(), 2u);  // the connection is still in step
  EXPECT_EQ(server.numConnections(), 1);
}

// A reply frame longer than the limit (here from a fake server) is refused before the client
// allocates it: CommError naming the limit and the length, not a 4 GiB allocation or a wait.
TEST(TCPStoreTest, ClientRefusesAReplyPastTheFrameLimit) {
  net::Fd listener = net::listenOn("127.0.0.1", 0, 4);
  const uint16_t port = net::localPort(listener.get());
  std::atomic<bool> done{false};
  std::thread fake([&] {
    pollfd p{listener.get(), POLLIN, 0};  // the listener is non-blocking
    ASSERT_EQ(poll(&p, 1, 10000), 1);
    net::Fd c(accept(listener.get(), nullptr, nullptr));
    ASSERT_GE(c.get(), 0);
    int flags = fcntl(c.get(), F_GETFL, 0);
    ASSERT_EQ(fcntl(c.get(), F_SETFL, flags & ~O_NONBLOCK), 0);
    // Each request: a u32 length, then that many bytes. Answer the hello with "ok", the next
    // request with a header announcing one byte more than the limit.
    auto readFrame = [&] {
      uint8_t head[4];
      if (recv(c.get(), head, 4, MSG_WAITALL) != 4) return false;
      uint8_t chunk[4096];  // the body is read and dropped
      for (size_t left = tcpstore::readFrameLength(head); left > 0;) {
        const size_t n = std::min(left, sizeof(chunk));
        if (recv(c.get(), chunk, n, MSG_WAITALL) != static_cast<ssize_t>(n)) return false;
        left -= n;
      }
      return true;
    };
    ASSERT_TRUE(readFrame());
    std::vector<uint8_t> ok = le32(2);  // ok, no authentication
    ok.push_back(0);
    ok.push_back(0);
    ASSERT_EQ(send(c.get(), ok.data(), ok.size(), MSG_NOSIGNAL), 6);
    ASSERT_TRUE(readFrame());
    std::vector<uint8_t> huge = le32(tcpstore::kMaxFrameBytes + 1);
    huge.push_back(0);
    ASSERT_EQ(send(c.get(), huge.data(), huge.size(), MSG_NOSIGNAL), 5);
    while (!done.load()) std::this_thread::sleep_for(Milliseconds(5));
  });
  struct Joiner {
    std::atomic<bool>& done;
    std::thread& t;
    ~Joiner() {
      done = true;
      t.join();
    }
  } joiner{done, fake};
  {
    TCPStore client(clientOptions(port, Milliseconds(3000)));
    const std::string msg = expectThrows<CommError>([&] { client.get("k"); });
    EXPECT_NE(msg.find(std::to_string(tcpstore::kMaxFrameBytes + 1)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(tcpstore::kMaxFrameBytes)), std::string::npos) << msg;
  }
}

TEST(TCPStoreTest, WaitForWorkersCountsClients) {
  TCPStoreOptions o = clientOptions(freePort(), Milliseconds(10000));
  o.isServer = true;
  o.numWorkers = 3;
  o.waitForWorkers = true;
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&] { TCPStore c(clientOptions(o.port)); });
  }
  TCPStore server(o);  // returns once both clients (plus itself) connected
  for (auto& t : clients) t.join();
  EXPECT_EQ(server.server()->numWorkers(), 3);

  o.port = 0;
  o.timeout = Milliseconds(200);
  std::string msg = expectThrows<TimeoutError>([&] { TCPStore alone(o); });
  EXPECT_NE(msg.find("1 of 3 workers"), std::string::npos) << msg;
}

TEST(TCPStoreTest, SharedClientIsThreadSafe) {
  TCPStoreServer server;
  TCPStore store(clientOptions(server.port()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) store.add("shared", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.add("shared", 0), 800);
}

TEST(TCPStoreTest, ResolvesHostnamesAndIPv6) {
  TCPStoreServer server;
  TCPStoreOptions o = clientOptions(server.port());
  o.host = "localhost";
  TCPStore byName(o);
  byName.set("h", "1");
  net::Fd probe(socket(AF_INET6, SOCK_STREAM, 0));
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  if (!probe.valid() || bind(probe.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  o.host = "::1";
  TCPStore v6(o);
  EXPECT_EQ(v6.getString("h"), "1");
  // A server bound to ::1 only; errors name the bracketed address.
  TCPStoreServer v6only("::1", 0);
  TCPStoreOptions o6 = clientOptions(v6only.port());
  o6.host = "::1";
  TCPStore v6client(o6);
  v6client.setTimeout(Milliseconds(100));
  std::string msg = expectThrows<TimeoutError>([&] { v6client.get("nope"); });
  EXPECT_NE(msg.find("[::1]:" + std::to_string(v6only.port())), std::string::npos) << msg;
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
