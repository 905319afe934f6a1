// Direct gather and scatter: the root exchanges with every other rank concurrently (Comm::run
// progresses all n-1 streams at once); the others make one transfer each.
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void gatherDirect(Comm& c, const std::vector<void*>& blocks, const void* input, size_t bytes,
                  int root) {
  if (c.rank() != root) {
    c.send(root, input, bytes);
    return;
  }
  std::vector<P2POp> ops;
  for (int q = 0; q < c.size(); ++q) {
    if (q == root) {
      if (blocks[q] != input && bytes > 0) std::memcpy(blocks[q], input, bytes);
      continue;
    }
    ops.push_back({false, q, static_cast<uint8_t*>(blocks[q]), bytes, 0});
  }
  c.run(ops);
}

void scatterDirect(Comm& c, const std::vector<const void*>& blocks, void* output, size_t bytes,
                   int root) {
  if (c.rank() != root) {
    c.recv(root, output, bytes);
    return;
  }
  std::vector<P2POp> ops;
  for (int q = 0; q < c.size(); ++q) {
    if (q == root) {
      if (blocks[q] != output && bytes > 0) std::memcpy(output, blocks[q], bytes);
      continue;
    }
    ops.push_back({true, q, static_cast<uint8_t*>(const_cast<void*>(blocks[q])), bytes, 0});
  }
  c.run(ops);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
