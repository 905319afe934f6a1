// Ring allreduce = ring reduce-scatter + ring allgather, in place.
//
// The buffer is cut into size() blocks (near-equal; some may be empty). In n-1 reduce-scatter
// steps each rank sends one block to its right neighbour and reduces the block arriving from its
// left one, so that block r ends fully reduced on rank r; n-1 allgather steps then circulate the
// finished blocks. Each rank sends 2(n-1)/n of the buffer: bandwidth-optimal for large messages.
#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void allreduceRing(Comm& c, void* data, size_t count, DataType dtype, ReduceOp::Kind op) {
  const int n = c.size();
  std::vector<size_t> off, cnt;
  splitBlocks(count, n, &off, &cnt);
  reduceScatterRing(c, data, off, cnt, dtype, op);
  const size_t es = elementSize(dtype);
  std::vector<void*> blocks(n);
  std::vector<size_t> bytes(n);
  for (int r = 0; r < n; ++r) {
    blocks[r] = static_cast<uint8_t*>(data) + off[r] * es;
    bytes[r] = cnt[r] * es;
  }
  allgatherRing(c, blocks, bytes);
}

void allreduceRingWide(Comm& c, void* data, size_t count, DataType dtype, int divisor) {
  const int n = c.size();
  std::vector<size_t> off, cnt;
  splitBlocks(count, n, &off, &cnt);
  const size_t es = elementSize(dtype);
  std::vector<void*> blocks(n);
  std::vector<const void*> inputs(n);
  std::vector<size_t> bytes(n);
  for (int r = 0; r < n; ++r) {
    blocks[r] = static_cast<uint8_t*>(data) + off[r] * es;
    inputs[r] = blocks[r];
    bytes[r] = cnt[r] * es;
  }
  reduceScatterRingWide(c, inputs, cnt, blocks[c.rank()], dtype, divisor, {});
  allgatherRing(c, blocks, bytes);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
