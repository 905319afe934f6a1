// MixedTransport: one transport per peer, for groups that span hosts with several ranks on some.
//
// Ranks on this rank's host are reached through a ShmTransport built over just those ranks (its
// own workspace, local rank numbers); every other rank through a network transport (ibverbs when
// a device is present, else tcp) built over the whole group. Algorithms see one Transport with
// global rank numbers; each call is routed by peer.
//
// Waiting: when a wait involves only local peers it sleeps on the shm doorbell (futex), when only
// remote peers it sleeps in the network transport (poll / completion channel). When it involves
// both, it sleeps in the network transport in slices of at most 1 ms, checking the shm doorbell
// between slices: a local peer's progress is then seen within ~1 ms. (Algorithms that mix both in
// one step are the ring/tree algorithms over a mixed group; the direct shm algorithms are used only
// when every rank shares the host.)
//
// Threads: as every Transport (one thread per channel). Nothing here blocks beyond wait().
#pragma once

#include <memory>
#include <vector>

#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

class MixedTransport : public Transport {
 public:
  // `local` spans the ranks in `localRanks` (ascending global ranks; local rank i is
  // localRanks[i]); `net` spans the whole group of `size` ranks.
  MixedTransport(std::unique_ptr<Transport> local, std::vector<int> localRanks,
                 std::unique_ptr<Transport> net, int size);

  const char* name() const override { return name_; }
  size_t trySend(int ch, int peer, const void* buf, size_t n) override;
  size_t tryRecv(int ch, int peer, void* buf, size_t n) override;
  size_t trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                    size_t n) override;
  size_t tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) override;
  uint32_t progressToken(int ch) override;
  void wait(int ch, uint32_t token, const std::vector<Interest>& interests, Milliseconds maxWait,
            SpinWindow spin) override;
  void wakeSelf(int ch) override;
  bool sendsComplete(int ch) override;
  void revokeSends(int ch) override;
  bool peerGone(int peer) override;
  bool streamEnded(int ch, int peer) override;
  void checkPeers() override;
  void abortCollectives() override;
  void abortAll() override;
  bool peerRevoked() override { return local_->peerRevoked() || net_->peerRevoked(); }

  // Global rank -> local rank on this host, or -1 for a remote rank.
  int localIndex(int peer) const { return localIdx_[peer]; }

 private:
  std::unique_ptr<Transport> local_, net_;
  std::vector<int> localRanks_;
  std::vector<int> localIdx_;
  const char* name_;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
