// Fuzzes how the verbs backend's p2p engine (c10d/backends/verbs/p2p_engine.h) reads a peer's
// stream: the 16-byte headers (magic, tag, length), the length a header announces (believed for a
// posted recv of exactly that size, else bounded by maxUnexpectedBytes), matching against posted
// recvs, size mismatches (payload drained), unexpected messages and a corrupt stream.
//
// The engine's own code runs over FakeTransport, as rank 1 of 2 whose channel-1 stream from rank 0
// is the fuzz input, handed out in chunks of a size the input picks. The engine is driven on this
// thread (P2PEngine::ManualDrive, one poll() per round of its loop), so a run is deterministic and
// costs no thread. Input:
//   byte 0        number of recvs to post before the stream is read (low 2 bits), and the chunk
//                 size (high 6 bits b: chunks of 1 + 7 * b bytes)
//   per recv      u8 src (even: rank 0, odd: any source), u8 tag, u16 length (LE, at most 4096)
//   rest          rank 0's p2p stream
// More recvs are posted while the stream is read: after each poll, when the input's recv list is
// not exhausted (so recvs also arrive after their message, as unexpected ones). Once a poll makes
// no progress (stream consumed, or rank 0 marked gone after a corrupt header) the engine is
// stopped; every recv must then be completed, and a recv that completed successfully must hold
// exactly the bytes of a message of its tag from the stream.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/verbs/p2p_engine.h"
#include "c10d/backends/verbs/transport/transport.h"
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
    return k;
  }
  uint32_t progressToken(int) override { return 0; }
  void wait(int, uint32_t, const std::vector<verbs::Interest>&, Milliseconds,
            verbs::SpinWindow) override {}
  void wakeSelf(int) override {}
  void checkPeers() override {}

 private:
  const uint8_t* data_;
  const size_t size_;
  const size_t chunk_;
  size_t pos_ = 0;
};

// Whether `got` is the payload of some message with `tag` in the stream (headers are believed
// only as far as the stream goes).
bool isMessageOf(const uint8_t* stream, size_t size, int tag, const std::vector<uint8_t>& got) {
  size_t pos = 0;
  while (size - pos >= 16) {
    int32_t t;
    uint64_t len;
    std::memcpy(&t, stream + pos + 4, 4);
    std::memcpy(&len, stream + pos + 8, 8);
    pos += 16;
    if (len > size - pos) return false;
    if (t == tag && len == got.size() &&
        (len == 0 || std::memcmp(stream + pos, got.data(), len) == 0)) {
      return true;
    }
    pos += len;
  }
  return false;
}

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
    std::shared_ptr<Work> work;
  };
  std::vector<Recv> recvs;
  for (int i = 0; i < numRecvs && pos + 4 <= size; ++i, pos += 4) {
    const size_t len = std::min<size_t>(data[pos + 2] | (data[pos + 3] << 8), 4096);
    recvs.push_back(Recv{(data[pos] & 1) ? -1 : 0, data[pos + 1], std::vector<uint8_t>(len), {}});
  }
  const uint8_t* stream = data + pos;
  const size_t streamSize = size - pos;
  FakeTransport t(stream, streamSize, chunk);
  {
    verbs::P2PEngine engine(t, /*rank=*/1, /*size=*/2, "fuzz", nullptr, kMaxUnexpectedBytes,
                            verbs::P2PEngine::ManualDrive{});
    uint64_t seq = 0;
    auto post = [&](Recv& r) {
      r.work = engine.recv(Tensor(r.buf.data(), r.buf.size(), DataType::kUInt8), r.src, r.tag,
                           ++seq, Milliseconds(1000));
    };
    // The first recv before anything is read, the others one per poll.
    size_t posted = 0;
    if (!recvs.empty()) post(recvs[posted++]);
    for (int rounds = 0;; ++rounds) {
      FUZZ_CHECK(rounds < 1 << 20, "the p2p engine keeps progressing forever");
      const bool progress = engine.poll();
      if (posted < recvs.size()) {
        post(recvs[posted++]);
        continue;
      }
      if (!progress) break;
    }
    engine.stop();
  }
  for (const auto& r : recvs) {
    FUZZ_CHECK(r.work->isCompleted(), "a recv was left pending after stop()");
    if (r.work->exception() == nullptr) {
      FUZZ_CHECK(isMessageOf(stream, streamSize, r.tag, r.buf),
                 "a recv completed with bytes that are no message of its tag");
    }
  }
  return 0;
}
