// broadcast: entry (the table picks, algo_table.cc) plus the binomial-tree, pipelined-chain and shm
// variants.
//
// binomial: log2(n) rounds; in relative ranks (v = rank - root mod n) v receives from v minus its
//   lowest set bit and sends to v + 2^k for every 2^k below that bit. Best for small messages.
// chain: root -> root+1 -> ... in segments, each rank forwarding segment k while receiving k+1:
//   time ~ bytes/bw + (n-2) segments. Best for large messages without shared memory.
// shm: root copies chunks into its staging slot, one barrier per chunk, the others copy out
//   (one copy per receiver, pipelined with the root's next chunk).
#include <algorithm>
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {
constexpr size_t kChainSegment = 256 << 10;
}

void broadcast(Comm& c, const AlgoSelector& sel, void* data, size_t bytes, int root) {
  if (bytes == 0 || c.size() == 1) return;
  CollArgs a;
  a.out = data;
  a.bytes = bytes;
  a.count = bytes;
  a.root = root;
  sel.run(Collective::kBroadcast, c, a);
}

void broadcastBinomial(Comm& c, void* data, size_t bytes, int root) {
  const int n = c.size();
  const int v = (c.rank() - root + n) % n;
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      c.recv(((v - mask) + root) % n, data, bytes);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) c.send((v + mask + root) % n, data, bytes);
}

void broadcastChain(Comm& c, void* data, size_t bytes, int root) {
  const int n = c.size();
  const int v = (c.rank() - root + n) % n;
  const int prev = v > 0 ? (c.rank() - 1 + n) % n : -1;
  const int next = v < n - 1 ? (c.rank() + 1) % n : -1;
  uint8_t* d = static_cast<uint8_t*>(data);
  const size_t nSeg = (bytes + kChainSegment - 1) / kChainSegment;
  auto seg = [&](size_t k, size_t* len) {
    *len = std::min(kChainSegment, bytes - k * kChainSegment);
    return d + k * kChainSegment;
  };
  if (prev < 0) {
    c.send(next, d, bytes);  // the transport streams it; the chain pipelines behind
    return;
  }
  for (size_t k = 0; k <= nSeg; ++k) {
    std::vector<P2POp> ops;
    size_t len;
    if (k < nSeg) ops.push_back({false, prev, seg(k, &len), len, 0});
    if (next >= 0 && k > 0) ops.push_back({true, next, seg(k - 1, &len), len, 0});
    c.run(ops);
  }
}

void broadcastShm(Comm& c, void* data, size_t bytes, int root) {
  const StagingSlots& s = *c.slots();
  const size_t chunk = s.slotBytes();
  uint8_t* d = static_cast<uint8_t*>(data);
  if (bytes > 0 && bytes <= StagingSlots::kSmallSlotBytes) {
    // With the root's arrival at the barrier: one cache-line transfer, not two.
    const uint64_t t = s.step();
    if (c.rank() == root) std::memcpy(s.smallSlot(root, t), d, bytes);
    c.shmBarrier();
    if (c.rank() != root) std::memcpy(d, s.smallSlot(root, t), bytes);
    return;
  }
  const size_t nChunks = (bytes + chunk - 1) / chunk;
  for (size_t j = 0; j < nChunks; ++j) {
    const uint64_t t = s.step();
    const size_t len = std::min(chunk, bytes - j * chunk);
    if (c.rank() == root) std::memcpy(s.slot(root, t), d + j * chunk, len);
    c.shmBarrier();
    if (c.rank() != root) std::memcpy(d + j * chunk, s.slot(root, t), len);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
