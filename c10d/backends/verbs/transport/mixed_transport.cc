#include "c10d/backends/verbs/transport/mixed_transport.h"

#include <algorithm>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

MixedTransport::MixedTransport(std::unique_ptr<Transport> local, std::vector<int> localRanks,
                               std::unique_ptr<Transport> net, int size)
    : local_(std::move(local)),
      net_(std::move(net)),
      localRanks_(std::move(localRanks)),
      localIdx_(size, -1) {
  C10D_CHECK(local_ && net_, "MixedTransport needs a local and a network transport");
  for (size_t i = 0; i < localRanks_.size(); ++i) localIdx_[localRanks_[i]] = static_cast<int>(i);
  name_ = std::strcmp(net_->name(), "ibverbs") == 0 ? "shm+ibverbs" : "shm+tcp";
}

size_t MixedTransport::trySend(int ch, int peer, const void* buf, size_t n) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->trySend(ch, l, buf, n) : net_->trySend(ch, peer, buf, n);
}

size_t MixedTransport::tryRecv(int ch, int peer, void* buf, size_t n) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->tryRecv(ch, l, buf, n) : net_->tryRecv(ch, peer, buf, n);
}

size_t MixedTransport::trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                                  size_t n) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->trySendHdr(ch, l, hdr, hn, buf, n)
                : net_->trySendHdr(ch, peer, hdr, hn, buf, n);
}

size_t MixedTransport::tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->tryRecvHdr(ch, l, hdr, hn, buf, n)
                : net_->tryRecvHdr(ch, peer, hdr, hn, buf, n);
}

uint32_t MixedTransport::progressToken(int ch) {
  // The network transports' tokens are constant (they wait on the interests themselves); the shm
  // doorbell is what can change between a poll and a sleep.
  return local_->progressToken(ch) + net_->progressToken(ch);
}

void MixedTransport::wait(int ch, uint32_t token, const std::vector<Interest>& interests,
                          Milliseconds maxWait, SpinWindow spin) {
  std::vector<Interest> local, remote;
  for (const Interest& i : interests) {
    const int l = localIdx_[i.peer];
    if (l >= 0) {
      Interest li = i;
      li.peer = l;
      local.push_back(li);
    } else {
      remote.push_back(i);
    }
  }
  const uint32_t netToken = net_->progressToken(ch);
  if (remote.empty()) {  // only local peers, or none (the p2p thread idling: wakeSelf rings both)
    local_->wait(ch, token - netToken, local, maxWait, spin);
    return;
  }
  if (local.empty() && !remote.empty()) {
    net_->wait(ch, netToken, remote, maxWait, spin);
    return;
  }
  // Both kinds.
  const auto deadline = std::chrono::steady_clock::now() + maxWait;
  for (;;) {
    if (progressToken(ch) != token) return;
    const auto left =
        std::chrono::duration_cast<Milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= Milliseconds::zero()) return;
    net_->wait(ch, netToken, remote, std::min(left, Milliseconds(1)), spin);
    return;  // the network side may have progressed: let the caller poll
  }
}

void MixedTransport::wakeSelf(int ch) {
  local_->wakeSelf(ch);
  net_->wakeSelf(ch);
}

bool MixedTransport::sendsComplete(int ch) {
  return local_->sendsComplete(ch) && net_->sendsComplete(ch);
}

void MixedTransport::revokeSends(int ch) {
  local_->revokeSends(ch);
  net_->revokeSends(ch);
}

bool MixedTransport::peerGone(int peer) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->peerGone(l) : net_->peerGone(peer);
}

bool MixedTransport::streamEnded(int ch, int peer) {
  const int l = localIdx_[peer];
  return l >= 0 ? local_->streamEnded(ch, l) : net_->streamEnded(ch, peer);
}

void MixedTransport::abortCollectives() {
  local_->abortCollectives();
  net_->abortCollectives();
}

void MixedTransport::abortAll() {
  local_->abortAll();
  net_->abortAll();
}

void MixedTransport::checkPeers() {
  local_->checkPeers();
  net_->checkPeers();
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
