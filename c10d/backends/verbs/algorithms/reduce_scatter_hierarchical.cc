// Two-level reduce-scatter for groups that span hosts (HostLayout::multiHost), the mirror of
// allgather_hierarchical.cc: every block crosses the network once for each other host, already
// summed over the ranks of the host it leaves.
//
// Balanced layout (H hosts of L > 1 ranks each): (1) inside each host, H reduce-scatter rings of
// L ranks over shm, ring h leaving local rank i with the host's sum of the block of host h's i-th
// rank (scratch buffer 2 holds the H sums); (2) local rank i of every host reduce-scatters those
// sums with the i-th ranks of the other hosts: a ring of H ranks over the network, the L columns
// at once. A host sends (H-1)/H of the input over the network, where the flat ring, ranks of a
// host next to each other, sends (n-1)/n of it out of each host (2 hosts of 2: 1/2 against 3/4).
// The steps are as many as the ring's: H(L-1) + H-1 = n-1. PREMUL_SUM's scale applies once, as
// step 1 loads the inputs. Other layouts run the flat ring.
#include <functional>
#include <vector>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void reduceScatterHierarchical(Comm& c, const std::vector<const void*>& inputs, void* out,
                               size_t count, DataType dtype, ReduceOp::Kind op,
                               const std::function<void(void*, const void*, size_t)>& scaleCopy) {
  const HostLayout* layout = c.hosts();
  if (layout == nullptr || !layout->balanced) {
    reduceScatterRingInputs(c, inputs, out, count, dtype, op, scaleCopy);
    return;
  }
  const std::vector<std::vector<int>>& hosts = layout->hosts;
  const std::vector<int> column = layout->column(layout->localIndex(c.rank()));
  const size_t blockBytes = count * elementSize(dtype);
  uint8_t* sums = c.scratch(hosts.size() * blockBytes + 1, 2);
  std::vector<const void*> in;
  {
    Comm::View v(c, layout->hostRanks(c.rank()));
    for (size_t h = 0; h < hosts.size(); ++h) {
      in.clear();
      for (int r : hosts[h]) in.push_back(inputs[static_cast<size_t>(r)]);
      reduceScatterRingInputs(c, in, sums + h * blockBytes, count, dtype, op, scaleCopy);
    }
  }
  in.clear();
  for (size_t h = 0; h < hosts.size(); ++h) in.push_back(sums + h * blockBytes);
  static const std::function<void(void*, const void*, size_t)> kNoScale;
  Comm::View v(c, column);
  reduceScatterRingInputs(c, in, out, count, dtype, op, kNoScale);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
