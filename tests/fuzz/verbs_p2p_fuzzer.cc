// Fuzzes how the verbs backend's p2p engine (backends/verbs/p2p_engine.h) reads a peer's stream:
// the 16-byte headers (magic, tag, length), the length a header announces (believed for a posted
// recv of exactly that size, else bounded by maxUnexpectedBytes), matching against posted recvs,
// size mismatches (payload drained), unexpected messages and a corrupt stream.
//
// The engine runs unchanged over FakeTransport: rank 1 of 2, whose channel-1 stream from rank 0
// is the fuzz input, handed out in chunks of a size the input picks. Input:
//   byte 0        number of recvs to post before the stream starts (0-3, low 2 bits) and the
//                 chunk size selector (high 6 bits: chunks of 1 + (bits * 7) bytes)
//   per recv      u8 src (even: rank 0, odd: any source), u8 tag, u16 length (LE, at most 4096)
//   rest          rank 0's p2p stream
// The engine's first poll waits until the recvs are posted, so a run is deterministic. Once the
// engine waits without having read anything (stream consumed, or rank 0 marked gone after a
// corrupt header) the harness stops it; every recv must then be completed.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/verbs/p2p_engine.h"
#include "backends/verbs/transport.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace c10d;

constexpr size_t kMaxUnexpectedBytes = 64 << 10;

class FakeTransport : public verbs::Transport {
 public:
  FakeTransport(const uint8_t* data, size_t size, size_t chunk)
      : data_(data), size_(size), chunk_(chunk) {}

  const char* name() const override { return "fuzz"; }
  size_t trySend(int, int, const void*, size_t n) override { return n; }
  size_t tryRecv(int ch, int peer, void* buf, size_t n) override {
    if (ch != verbs::kP2PChannel || peer != 0) return 0;
    const size_t k = std::min({n, size_ - pos_, chunk_});
    std::memcpy(buf, data_ + pos_, k);
    pos_ += k;
    readSinceWait_ += k;
    return k;
  }
  uint32_t progressToken(int) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_; });
    return token_;
  }
  void wait(int, uint32_t, const std::vector<verbs::Interest>&, Milliseconds maxWait) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (readSinceWait_ == 0) {
      quiet_ = true;
      cv_.notify_all();
    }
    readSinceWait_ = 0;
    cv_.wait_for(lock, maxWait, [&] { return woken_; });
    woken_ = false;
  }
  void wakeSelf(int) override {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
    ++token_;
    cv_.notify_all();
  }
  void checkPeers() override {}

  void start() {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    cv_.notify_all();
  }
  // Until the engine has nothing left to do with the stream (bounded: a hang is a finding).
  void waitQuiet() {
    std::unique_lock<std::mutex> lock(mu_);
    FUZZ_CHECK(cv_.wait_for(lock, std::chrono::seconds(20), [&] { return quiet_; }),
               "the p2p engine never went idle");
  }

 private:
  const uint8_t* data_;
  const size_t size_;
  const size_t chunk_;
  size_t pos_ = 0;            // engine thread only
  size_t readSinceWait_ = 0;  // engine thread only (read under mu_ in wait)
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool woken_ = false;
  bool quiet_ = false;
  uint32_t token_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int numRecvs = data[0] & 3;
  const size_t chunk = 1 + static_cast<size_t>(data[0] >> 2) * 7;
  size_t pos = 1;
  struct Recv {
    int src;
    int tag;
    std::vector<uint8_t> buf;
  };
  std::vector<Recv> recvs;
  for (int i = 0; i < numRecvs && pos + 4 <= size; ++i, pos += 4) {
    const size_t len = std::min<size_t>(data[pos + 2] | (data[pos + 3] << 8), 4096);
    recvs.push_back(Recv{(data[pos] & 1) ? -1 : 0, data[pos + 1], std::vector<uint8_t>(len)});
  }
  FakeTransport t(data + pos, size - pos, chunk);
  std::vector<std::shared_ptr<Work>> works;
  {
    verbs::P2PEngine engine(t, /*rank=*/1, /*size=*/2, "fuzz", nullptr, kMaxUnexpectedBytes);
    uint64_t seq = 0;
    for (auto& r : recvs) {
      works.push_back(engine.recv(Tensor(r.buf.data(), r.buf.size(), DataType::kUInt8), r.src,
                                  r.tag, ++seq, Milliseconds(1000)));
    }
    t.start();
    t.waitQuiet();
    engine.stop();
  }
  for (const auto& w : works) FUZZ_CHECK(w->isCompleted(), "a recv was left pending after stop()");
  return 0;
}
