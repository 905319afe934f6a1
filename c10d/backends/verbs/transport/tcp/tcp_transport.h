// TcpTransport: the transport for hosts with neither shared memory nor RDMA between them.
//
// Setup (collective, through the Store): each rank listens on an ephemeral port and publishes
// "address:port" (C10D_TCP_IFADDR, else this host's name resolved to IPv4); the lower rank of
// every pair connects (retrying until the timeout, tcpConnectBackoff between tries), once per
// channel, and introduces itself with a hello {magic, rank, channel}. The higher rank reads the
// hellos of every accepted socket at once, without blocking, until the setup timeout: a stray
// connection to the listener (silent, or sending anything but a hello) is dropped and cannot
// stall or fail the setup; without the real peers it ends in TimeoutError. Sockets are then
// non-blocking, TCP_NODELAY, with C10D_TCP_BUF buffers.
//
// The caller's thread (channel 0) and the p2p thread (channel 1) each poll() only their own
// sockets plus an eventfd (wakeSelf); there is no extra I/O thread. A reset, EOF or EPIPE on a
// socket is a CommError naming the peer rank, its address and errno.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/fd.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace verbs {

// Sleep before connect attempt `attempt + 1`: 1, 2, 4, ... ms, capped at 100 ms.
Milliseconds tcpConnectBackoff(int attempt);

// The hello a connecting rank sends first on each of its sockets (host byte order: one job runs
// one build on one architecture).
struct TcpHello {
  uint32_t magic;
  int32_t rank;
  int32_t channel;
};
constexpr uint32_t kTcpHelloMagic = 0xC10D7C70u;

// Decodes the first bytes a connection sent: the hello, when it has the magic and claims
// a rank in [0, selfRank) (only lower ranks connect) and a channel in [0, kNumChannels); nullopt
// for anything else, including n != sizeof(TcpHello). Whether that slot is still free is the
// caller's check. Pure; fuzzed by tests/fuzz/verbs_tcp_hello_fuzzer.cc.
std::optional<TcpHello> parseTcpHello(const void* bytes, size_t n, int selfRank);

class TcpTransport : public Transport {
 public:
  TcpTransport(Store& store, int rank, int size, const VerbsConfig& cfg, Milliseconds timeout);
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  size_t trySend(int ch, int peer, const void* buf, size_t n) override;
  size_t tryRecv(int ch, int peer, void* buf, size_t n) override;
  size_t trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                    size_t n) override;
  size_t tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) override;
  uint32_t progressToken(int) override { return 0; }
  void wait(int ch, uint32_t token, const std::vector<Interest>& interests, Milliseconds maxWait,
            SpinWindow spin) override;
  void wakeSelf(int ch) override;
  void checkPeers() override {}
  // Shuts the collective sockets down both ways: peers see a hang-up (POLLRDHUP).
  void abortCollectives() override;
  void abortAll() override;
  // The peer closed its connections (exited, died, or destroyed its group): its p2p stream ended
  // or its collective socket reports a hang-up. Any thread.
  bool peerGone(int peer) override;
  bool streamEnded(int ch, int peer) override;
  // Test hook (fault_hooks.h): shutdown(2) of the collective connection to `peer`, fd kept open.
  // Any thread.
  void shutdownConnection(int peer);

 private:
  int fd(int ch, int peer) const { return conns_[ch * size_ + peer].get(); }
  Fd& conn(int ch, int peer) { return conns_[ch * size_ + peer]; }
  [[noreturn]] void fail(int peer, const char* what, int err);
  // "rank 0, rank 2": every peer whose connections are closed now (for error messages).
  std::string gonePeers();
  void setup(Store& store, const VerbsConfig& cfg, Milliseconds timeout);
  void closeAll();

  const int rank_;
  const int size_;
  std::vector<Fd> conns_;  // [channel * size + peer]
  std::vector<std::string> addrs_;
  std::vector<std::atomic<bool>> closed_;  // peer closed its p2p connection (set by the p2p thread)
  Fd eventFds_[kNumChannels];
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
