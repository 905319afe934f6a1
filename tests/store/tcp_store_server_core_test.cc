// The TCPStore server's protocol engine (ServerCore) driven directly, without sockets: the
// waiter bookkeeping of parked requests, checked by ServerCore::checkInvariants after each step.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/tcp/tcp_store_protocol.h"
#include "c10d/store/tcp/tcp_store_server_core.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {
namespace {

class ServerCoreTest : public ::testing::Test {
 protected:
  ServerCoreTest() : core_(config(), "test", hooks()) {}

  static ServerConfig config() {
    ServerConfig c;
    c.maxConnections = 8;
    c.maxKeys = 64;
    c.maxValueBytes = 1024;
    c.maxClientBytes = 1 << 20;
    c.maxTotalBytes = 1 << 20;
    c.handshakeTimeout = std::chrono::milliseconds(1000);
    return c;
  }
  static ServerCore::Hooks hooks() {
    ServerCore::Hooks h;
    h.log = [](const std::string&) {};
    return h;
  }

  void send(ServerCore::Conn& c, FrameWriter& w) {
    const auto& frame = w.finish();
    core_.received(c, frame.data(), frame.size());
  }
  // A connection past its (secret-less) hello, its reply taken.
  ServerCore::Conn& connect() {
    ServerCore::Conn& c = core_.open("peer");
    FrameWriter w(static_cast<uint8_t>(Op::kHello));
    w.u32(kMagic);
    w.u32(kVersion);
    w.u8(1);
    w.u8(0);
    Nonce n{};
    w.raw(n.data(), n.size());
    send(c, w);
    EXPECT_EQ(c.phase, ServerCore::Phase::kReady);
    c.out.clear();
    c.outBegin = 0;
    return c;
  }
  void get(ServerCore::Conn& c, const std::string& key) {
    FrameWriter w(static_cast<uint8_t>(Op::kGet));
    w.str(key);
    send(c, w);
  }
  void set(ServerCore::Conn& c, const std::string& key, const std::string& value) {
    FrameWriter w(static_cast<uint8_t>(Op::kSet));
    w.str(key);
    w.bytes(value.data(), value.size());
    send(c, w);
  }
  void expectConsistent() { EXPECT_EQ(core_.checkInvariants(), ""); }

  ServerCore core_;
};

// "" is a key like any other. It once also meant "on no waiter list", so a get of "" left its
// connection parked on no key, and its waiter entry behind when it closed (found by CI's fuzzing).
TEST_F(ServerCoreTest, AGetOfTheEmptyKeyParksAndIsUnlistedWhenItsConnectionCloses) {
  ServerCore::Conn& a = connect();
  get(a, "");
  EXPECT_TRUE(a.parked);
  expectConsistent();
  core_.peerClosed(a);
  core_.reapDead();
  expectConsistent();

  ServerCore::Conn& b = connect();
  ServerCore::Conn& setter = connect();
  get(b, "");
  EXPECT_TRUE(b.parked);
  expectConsistent();
  set(setter, "", "v");
  EXPECT_FALSE(b.parked);
  // b's reply: a 4-byte length, status ok, then the value with its u32 length.
  const std::vector<uint8_t> want = {6, 0, 0, 0, static_cast<uint8_t>(Status::kOk),
                                     1, 0, 0, 0, 'v'};
  EXPECT_EQ(std::vector<uint8_t>(b.out.begin() + b.outBegin, b.out.end()), want);
  expectConsistent();
}

// A request parked on "" and then on a second missing key moves between the two waiter lists.
TEST_F(ServerCoreTest, AMultiGetMovesFromTheEmptyKeysWaiterListToTheNextMissingKey) {
  ServerCore::Conn& c = connect();
  ServerCore::Conn& setter = connect();
  FrameWriter w(static_cast<uint8_t>(Op::kMultiGet));
  w.u32(2);
  w.str("");
  w.str("k");
  send(c, w);
  EXPECT_TRUE(c.parked);
  expectConsistent();
  set(setter, "", "x");
  EXPECT_TRUE(c.parked);
  EXPECT_EQ(c.waitingOn, "k");
  expectConsistent();
  core_.fail(c, "");
  core_.reapDead();
  expectConsistent();
  set(setter, "k", "y");
  expectConsistent();
}

}  // namespace
}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
