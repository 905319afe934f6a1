// Hierarchical allreduce for groups that span hosts (HostLayout::multiHost): shared memory inside
// each host, the network only between hosts, and every network byte moved once per host instead
// of once per rank.
//
// Balanced layout (every host has the same number L > 1 of ranks): the buffer is cut into L
// blocks; (1) a reduce-scatter ring inside each host leaves local rank i with block i summed over
// its host; (2) local rank i of every host allreduces block i with local rank i of the others
// (H ranks, the flat algorithm the selector picks for H), so all L ranks of a host use the network
// at once, each for 1/L of the data; (3) an allgather ring inside each host spreads the blocks.
// Other layouts (hosts of different sizes, a rank alone): (1) a binomial reduce to each host's
// first rank, (2) the hosts' first ranks allreduce the whole buffer, (3) a broadcast inside each
// host.
//
// Every rank ends with the same bits: each block's final value is computed by one allreduce among
// the hosts (identical on its ranks) and then only copied.
#include <algorithm>
#include <vector>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

// The flat (network) allreduce for a group of n ranks, as the table picks it without a workspace
// or hosts.
void allreduceFlat(Comm& c, const AlgoSelector& sel, void* data, size_t count, DataType dtype,
                   ReduceOp::Kind op) {
  if (count == 0 || c.size() == 1) return;
  const CollArgs a = CollArgs::reduction(data, data, count, dtype, op);
  const SelectCtx flat{a.bytes, count, c.size(), /*shm=*/false, /*multiHost=*/false};
  sel.pick(Collective::kAllreduce, flat).fn(c, a, sel);
}

}  // namespace

void allreduceHierarchical(Comm& c, const AlgoSelector& sel, void* data, size_t count,
                           DataType dtype, ReduceOp::Kind op) {
  const HostLayout& layout = *c.hosts();
  const int me = c.rank();
  const std::vector<int>& local = layout.hostRanks(me);
  const size_t es = elementSize(dtype);
  uint8_t* base = static_cast<uint8_t*>(data);
  if (layout.balanced) {
    const int L = static_cast<int>(local.size());
    const size_t li = layout.localIndex(me);
    std::vector<size_t> off, cnt;
    splitBlocks(count, L, &off, &cnt);
    {
      Comm::View v(c, local);
      reduceScatterRing(c, data, off, cnt, dtype, op);
    }
    const std::vector<int> column = layout.column(li);  // the View keeps a pointer to it
    {
      Comm::View v(c, column);
      allreduceFlat(c, sel, base + off[li] * es, cnt[li], dtype, op);
    }
    std::vector<void*> blocks(static_cast<size_t>(L));
    std::vector<size_t> bytes(static_cast<size_t>(L));
    for (int b = 0; b < L; ++b) {
      blocks[b] = base + off[b] * es;
      bytes[b] = cnt[b] * es;
    }
    Comm::View v(c, local);
    allgatherRing(c, blocks, bytes);
    return;
  }
  std::vector<int> leaders;
  for (const auto& h : layout.hosts) leaders.push_back(h[0]);
  if (local.size() > 1) {
    Comm::View v(c, local);
    reduceBinomial(c, data, data, count, dtype, ReduceOp(op), 0);
  }
  if (me == local[0]) {
    Comm::View v(c, leaders);
    allreduceFlat(c, sel, data, count, dtype, op);
  }
  if (local.size() > 1) {
    Comm::View v(c, local);
    broadcast(c, sel, data, count * es, 0);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
