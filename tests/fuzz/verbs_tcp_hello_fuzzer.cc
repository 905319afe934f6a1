// Fuzzes the verbs tcp transport's hello check (c10d/backends/verbs/transport/tcp/tcp_transport.h,
// parseTcpHello): the 12 bytes {magic, rank, channel} a connection to a rank's listener must send
// before it is given a slot. Input: byte 0 is the receiving rank (0-255); the rest is cut into
// hellos of 12 bytes (the last one may be short). Each result is compared with the rule written out
// here: a hello is accepted iff it has the magic and claims a rank in [0, self) and a channel in
// [0, kNumChannels); a short one never is.
#include <cstdint>
#include <cstring>

#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using c10d::verbs::TcpHello;
  if (size == 0) return 0;
  const int self = data[0];
  for (size_t pos = 1; pos < size; pos += sizeof(TcpHello)) {
    const size_t n = std::min(sizeof(TcpHello), size - pos);
    const auto got = c10d::verbs::parseTcpHello(data + pos, n, self);
    bool want = false;
    TcpHello h{};
    if (n == sizeof(h)) {
      std::memcpy(&h, data + pos, sizeof(h));
      want = h.magic == c10d::verbs::kTcpHelloMagic && h.rank >= 0 && h.rank < self &&
             h.channel >= 0 && h.channel < c10d::verbs::kNumChannels;
    }
    FUZZ_CHECK(got.has_value() == want, "parseTcpHello disagrees with the rule");
    if (got) FUZZ_CHECK(got->rank == h.rank && got->channel == h.channel, "wrong slot");
  }
  return 0;
}
