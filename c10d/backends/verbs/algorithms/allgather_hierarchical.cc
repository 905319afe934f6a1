// Two-level allgather for groups that span hosts (HostLayout::multiHost): every block crosses the
// network once for each other host, never on to a second rank of a host it already reached.
//
// Balanced layout (H hosts of L > 1 ranks each): (1) local rank i of every host gathers the blocks
// of its column (the ranks with local index i, one per host): a ring of H ranks over the network,
// the L columns at once; (2) inside each host, H rings of L ranks, ring h spreading the blocks of
// host h's ranks (local rank i holds block i of every host after step 1). A host sends (H-1)/H of
// the output over the network, where the flat ring, ranks of a host next to each other, sends
// (n-1)/n of it out of each host (2 hosts of 2: 1/2 against 3/4; of 8: 1/2 against 15/16), and
// (n-1) blocks per rank when ranks of different hosts alternate. The steps are as many as the
// ring's: H-1 + H(L-1) = n-1. Other layouts run the flat ring.
#include <vector>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void allgatherHierarchical(Comm& c, const std::vector<void*>& blocks,
                           const std::vector<size_t>& bytes) {
  const HostLayout* layout = c.hosts();
  if (layout == nullptr || !layout->balanced) {
    allgatherRing(c, blocks, bytes);
    return;
  }
  const std::vector<int> column = layout->column(layout->localIndex(c.rank()));
  std::vector<void*> b;
  std::vector<size_t> n;
  // The blocks of `members` (group ranks), in their order.
  auto pick = [&](const std::vector<int>& members) {
    b.clear();
    n.clear();
    for (int r : members) {
      b.push_back(blocks[static_cast<size_t>(r)]);
      n.push_back(bytes[static_cast<size_t>(r)]);
    }
  };
  {
    Comm::View v(c, column);
    pick(column);
    allgatherRing(c, b, n);
  }
  Comm::View v(c, layout->hostRanks(c.rank()));
  for (const auto& h : layout->hosts) {
    pick(h);
    allgatherRing(c, b, n);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
