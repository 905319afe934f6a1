// TcpTransport setup (ranks as threads over one HashStore): a stray connection to a rank's
// listener (one that sends nothing, or garbage) neither stalls nor fails the setup of the real
// group, and without the real peer the setup ends in a clear TimeoutError; the connect backoff.
#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/config.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/fd.h"
#include "c10d/store/hash_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

using Clock = std::chrono::steady_clock;

VerbsConfig loopback() {
  return VerbsConfig::load({{"C10D_TRANSPORT", "tcp"}, {"C10D_TCP_IFADDR", "127.0.0.1"}});
}

// Connects to the listener rank `rank` published in `store` ("addr/<rank>" = "ip:port").
Fd connectToListenerOf(Store& store, int rank) {
  const std::string a = toString(store.get("addr/" + std::to_string(rank)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(connect(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << strerror(errno);
  return s;
}

// Rank 1 of 2 sets up while a stray client, connected to its listener before rank 0 is, sends
// `garbage` (possibly nothing) and then stays connected. Both ranks must finish setup and talk.
void strayClientCase(const std::string& garbage) {
  auto store = std::make_shared<HashStore>(Milliseconds(30000));
  const VerbsConfig cfg = loopback();
  std::promise<void> strayIn;
  Fd stray;
  std::thread strayThread([&] {
    stray = connectToListenerOf(*store, 1);
    if (!garbage.empty()) {
      EXPECT_EQ(send(stray.get(), garbage.data(), garbage.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(garbage.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // accepted before rank 0's
    strayIn.set_value();
  });
  std::unique_ptr<TcpTransport> t[2];
  std::exception_ptr err[2];
  auto rankFn = [&](int r) {
    try {
      t[r] = std::make_unique<TcpTransport>(*store, r, 2, cfg, Milliseconds(15000));
    } catch (...) {
      err[r] = std::current_exception();
    }
  };
  auto r1 = std::async(std::launch::async, rankFn, 1);
  strayIn.get_future().wait();
  auto r0 = std::async(std::launch::async, rankFn, 0);
  const bool done = r1.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(done) << "rank 1's setup stalled on a stray connection";
  if (!done) shutdown(stray.get(), SHUT_RDWR);  // unblock it so that the test can end
  r1.wait();
  r0.wait();
  strayThread.join();
  for (int r = 0; r < 2; ++r) {
    if (err[r]) {
      try {
        std::rethrow_exception(err[r]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " setup failed: " << e.what();
      }
    }
  }
  if (!t[0] || !t[1]) return;
  // The real connections carry data both ways on both channels.
  for (int ch = 0; ch < kNumChannels; ++ch) {
    for (int from = 0; from < 2; ++from) {
      const int to = 1 - from;
      const uint64_t v = 0xabcdef00u + static_cast<uint64_t>(ch * 2 + from);
      uint64_t got = 0;
      size_t sent = 0, recvd = 0;
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while ((sent < 8 || recvd < 8) && Clock::now() < deadline) {
        if (sent < 8)
          sent += t[from]->trySend(ch, to, reinterpret_cast<const char*>(&v) + sent, 8 - sent);
        if (recvd < 8)
          recvd += t[to]->tryRecv(ch, from, reinterpret_cast<char*>(&got) + recvd, 8 - recvd);
      }
      EXPECT_EQ(got, v) << "channel " << ch << ", rank " << from << " -> rank " << to;
    }
  }
}

TEST(VerbsTcpTransport, StrayClientSendingNothingDoesNotStallSetup) {
  strayClientCase("");
}

TEST(VerbsTcpTransport, StrayClientSendingGarbageDoesNotFailSetup) {
  strayClientCase(std::string("GET / HTTP/1.0\r\n\r\n"));
}

// Rank 0 published an address but never connects; a stray client connects to rank 1 and sends
// nothing. Rank 1's setup ends in a TimeoutError within about its timeout, not in a hang.
TEST(VerbsTcpTransport, WithoutTheRealPeerSetupTimesOutDespiteAStray) {
  auto store = std::make_shared<HashStore>(Milliseconds(30000));
  store->set("addr/0", "127.0.0.1:1");
  const VerbsConfig cfg = loopback();
  Fd stray;
  std::thread strayThread([&] { stray = connectToListenerOf(*store, 1); });
  const auto start = Clock::now();
  auto r1 = std::async(std::launch::async, [&]() -> std::string {
    try {
      TcpTransport t(*store, 1, 2, cfg, Milliseconds(1500));
      return "setup succeeded without rank 0";
    } catch (const TimeoutError& e) {
      return std::string("timeout: ") + e.what();
    } catch (const std::exception& e) {
      return std::string("wrong error: ") + e.what();
    }
  });
  strayThread.join();
  const bool done = r1.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(done) << "rank 1's setup hung on a stray connection";
  if (!done) shutdown(stray.get(), SHUT_RDWR);
  const std::string what = r1.get();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(what.rfind("timeout: ", 0), 0u) << what;
  EXPECT_NE(what.find("0 of 2"), std::string::npos) << what;
  EXPECT_LT(s, 6.0) << what;
}

TEST(VerbsTcpTransport, ConnectBackoffIsCapped) {
  EXPECT_EQ(tcpConnectBackoff(0).count(), 1);
  EXPECT_EQ(tcpConnectBackoff(1).count(), 2);
  EXPECT_EQ(tcpConnectBackoff(6).count(), 64);
  EXPECT_EQ(tcpConnectBackoff(7).count(), 100);
  // Past 31 attempts, 1 << attempt was undefined (and negative at 31).
  for (int a : {30, 31, 32, 33, 63, 64, 1000, INT_MAX}) {
    EXPECT_EQ(tcpConnectBackoff(a).count(), 100) << "attempt " << a;
  }
  EXPECT_EQ(tcpConnectBackoff(-1).count(), 1);
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
