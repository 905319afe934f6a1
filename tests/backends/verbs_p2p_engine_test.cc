// P2PEngine (the verbs backend's send/recv) over a fake transport that the test feeds bytes
// into: what the engine does with a header whose length it cannot trust.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/verbs/p2p_engine.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

// The p2p wire format (p2p_engine.h): a 16-byte header {magic, tag, length}, then the payload.
struct WireHeader {
  uint32_t magic;
  int32_t tag;
  uint64_t len;
};
constexpr uint32_t kWireMagic = 0xC10D5EEDu;

// Channel 1 of a two-rank transport as seen by rank 0: what the test feeds arrives from rank 1;
// what the engine sends vanishes.
class FakeTransport : public Transport {
 public:
  const char* name() const override { return "fake"; }
  size_t trySend(int, int, const void*, size_t n) override { return n; }
  size_t tryRecv(int, int peer, void* buf, size_t n) override {
    std::lock_guard<std::mutex> g(mu_);
    if (peer != 1) return 0;
    const size_t k = std::min(n, in_.size());
    std::copy(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(k),
              static_cast<uint8_t*>(buf));
    in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(k));
    return k;
  }
  uint32_t progressToken(int) override {
    std::lock_guard<std::mutex> g(mu_);
    return token_;
  }
  void wait(int, uint32_t token, const std::vector<Interest>&, Milliseconds maxWait,
            SpinWindow) override {
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait_for(g, std::min(maxWait, Milliseconds(5)), [&] { return token_ != token; });
  }
  void wakeSelf(int) override { bump(); }
  void checkPeers() override {}

  void feed(const void* p, size_t n) {
    {
      std::lock_guard<std::mutex> g(mu_);
      in_.insert(in_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    }
    bump();
  }
  void feedHeader(int32_t tag, uint64_t len) {
    WireHeader h{kWireMagic, tag, len};
    feed(&h, sizeof(h));
  }
  size_t pending() {
    std::lock_guard<std::mutex> g(mu_);
    return in_.size();
  }

 private:
  void bump() {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++token_;
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<uint8_t> in_;
  uint32_t token_ = 0;
};

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

// Waits for `w` and returns its CommError's message (a failure for anything else).
std::string commErrorOf(const std::shared_ptr<Work>& w) {
  try {
    w->wait(Milliseconds(10000));
    ADD_FAILURE() << "the recv completed";
  } catch (const CommError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected CommError, got: " << e.what();
  }
  return "";
}

constexpr uint64_t kBogus = uint64_t{1} << 62;

TEST(VerbsP2PEngine, HeaderLongerThanThePostedRecvIsACommError) {
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr);
  int32_t small = 0;
  auto w = engine.recv(tensorOf(&small, 1), 1, 0, 0, Milliseconds(10000));
  t.feedHeader(0, kBogus);
  const std::string msg = commErrorOf(w);
  EXPECT_TRUE(contains(msg, "rank 1")) << msg;
  EXPECT_TRUE(contains(msg, std::to_string(kBogus))) << msg;
}

TEST(VerbsP2PEngine, UnmatchedHeaderPastMemoryIsACommError) {
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr);
  t.feedHeader(7, kBogus);  // no recv posted yet: would be kept as unexpected
  for (int i = 0; i < 1000 && t.pending() > 0; ++i) std::this_thread::sleep_for(Milliseconds(1));
  int32_t small = 0;
  const std::string msg =
      commErrorOf(engine.recv(tensorOf(&small, 1), 1, 7, 0, Milliseconds(10000)));
  EXPECT_TRUE(contains(msg, "rank 1")) << msg;
  EXPECT_TRUE(contains(msg, std::to_string(kBogus))) << msg;
}

// With a limit of 1 MiB for unmatched messages: a posted recv of exactly the announced size is
// believed past the limit; a 2 MiB message that no recv takes is a CommError.
TEST(VerbsP2PEngine, LimitAppliesOnlyToMessagesNoRecvOfThatSizeTakes) {
  constexpr size_t kLimit = 1 << 20, kBig = 2 << 20;
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr, kLimit);
  std::vector<uint8_t> payload(kBig, 0x5a), got(kBig, 0);
  auto w = engine.recv(tensorOf(got.data(), got.size()), 1, 1, 0, Milliseconds(10000));
  t.feedHeader(1, kBig);
  t.feed(payload.data(), payload.size());
  w->wait(Milliseconds(10000));
  EXPECT_TRUE(got == payload);

  t.feedHeader(2, kBig);  // nobody waits for tag 2
  for (int i = 0; i < 1000 && t.pending() > 0; ++i) std::this_thread::sleep_for(Milliseconds(1));
  int32_t small = 0;
  const std::string msg =
      commErrorOf(engine.recv(tensorOf(&small, 1), 1, 2, 0, Milliseconds(10000)));
  EXPECT_TRUE(contains(msg, "rank 1")) << msg;
  EXPECT_TRUE(contains(msg, std::to_string(kBig))) << msg;
  EXPECT_TRUE(contains(msg, std::to_string(kLimit))) << msg;
}

// A message whose size differs from the recv it matched (within the limit) fails that recv with
// Error naming both sizes, is drained, and the stream goes on: the next message arrives intact.
TEST(VerbsP2PEngine, SizeMismatchUnderTheLimitIsDrainedAndTheStreamGoesOn) {
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr, 1 << 20);
  std::vector<uint8_t> fifty(50), three(3);
  auto w1 = engine.recv(tensorOf(fifty.data(), fifty.size()), 1, 1, 0, Milliseconds(10000));
  auto w2 = engine.recv(tensorOf(three.data(), three.size()), 1, 2, 0, Milliseconds(10000));
  std::vector<uint8_t> hundred(100000, 9);
  t.feedHeader(1, hundred.size());
  t.feed(hundred.data(), hundred.size());
  t.feedHeader(2, 3);
  t.feed("abc", 3);
  try {
    w1->wait(Milliseconds(10000));
    ADD_FAILURE() << "a 50-byte recv took a 100000-byte message";
  } catch (const CommError& e) {
    ADD_FAILURE() << "a size mismatch broke the stream: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "50 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), "100000 bytes")) << e.what();
  }
  w2->wait(Milliseconds(10000));
  EXPECT_EQ(std::string(three.begin(), three.end()), "abc");
}

// Waits (bounded) until the fake transport has handed every fed byte to the engine.
void drained(FakeTransport& t) {
  for (int i = 0; i < 10000 && t.pending() > 0; ++i) std::this_thread::sleep_for(Milliseconds(1));
  ASSERT_EQ(t.pending(), 0u) << "the engine did not read what was fed";
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
  return v;
}

// A recv posted while its message is still arriving takes it over: the part already buffered
// is copied and the rest read straight into the recv (a sendrecv then copies a ring's worth, not
// the whole message, a second time). Earlier complete messages from the same sender and tag are
// still matched first (MPI's non-overtaking order), and an any-source recv adopts too.
TEST(VerbsP2PEngine, RecvPostedWhileItsMessageArrivesTakesItOver) {
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr);
  constexpr size_t kN = 1 << 20, kHead = 100000;
  const std::vector<uint8_t> first = pattern(kN, 1), second = pattern(kN, 2),
                             third = pattern(kN, 3);
  t.feedHeader(3, kN);  // complete before any recv
  t.feed(first.data(), kN);
  t.feedHeader(3, kN);  // then the start of the second
  t.feed(second.data(), kHead);
  drained(t);
  std::vector<uint8_t> got1(kN), got2(kN), got3(kN);
  auto w1 = engine.recv(tensorOf(got1.data(), kN), 1, 3, 0, Milliseconds(10000));
  auto w2 = engine.recv(tensorOf(got2.data(), kN), 1, 3, 0, Milliseconds(10000));
  w1->wait(Milliseconds(10000));
  EXPECT_TRUE(got1 == first) << "the complete message was not matched first";
  t.feed(second.data() + kHead, kN - kHead);
  w2->wait(Milliseconds(10000));
  EXPECT_TRUE(got2 == second);

  t.feedHeader(4, kN);
  t.feed(third.data(), kHead);
  drained(t);
  auto w3 = engine.recv(tensorOf(got3.data(), kN), -1, 4, 0, Milliseconds(10000));
  t.feed(third.data() + kHead, kN - kHead);
  w3->wait(Milliseconds(10000));
  EXPECT_TRUE(got3 == third);
  EXPECT_EQ(w3->sourceRank(), 1);
}

// A recv of the wrong size posted while the message arrives fails at once with both sizes (it
// does not wait for the rest), the rest is drained, and the stream goes on.
TEST(VerbsP2PEngine, WrongSizedRecvPostedWhileItsMessageArrivesFailsAtOnce) {
  FakeTransport t;
  P2PEngine engine(t, 0, 2, "test", nullptr);
  constexpr size_t kN = 1 << 20;
  const std::vector<uint8_t> payload = pattern(kN, 5);
  t.feedHeader(4, kN);
  t.feed(payload.data(), 1000);
  drained(t);
  std::vector<uint8_t> fifty(50);
  auto w = engine.recv(tensorOf(fifty.data(), fifty.size()), 1, 4, 0, Milliseconds(10000));
  try {
    w->wait(Milliseconds(10000));
    ADD_FAILURE() << "a 50-byte recv took a 1 MiB message";
  } catch (const CommError& e) {
    ADD_FAILURE() << "a size mismatch broke the stream: " << e.what();
  } catch (const TimeoutError& e) {
    ADD_FAILURE() << "the mismatch waited for the rest of the message: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "50 bytes")) << e.what();
    EXPECT_TRUE(contains(e.what(), std::to_string(kN) + " bytes")) << e.what();
  }
  t.feed(payload.data() + 1000, kN - 1000);
  t.feedHeader(5, 3);
  t.feed("xyz", 3);
  std::vector<uint8_t> three(3);
  engine.recv(tensorOf(three.data(), 3), 1, 5, 0, Milliseconds(10000))->wait(Milliseconds(10000));
  EXPECT_EQ(std::string(three.begin(), three.end()), "xyz");
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
