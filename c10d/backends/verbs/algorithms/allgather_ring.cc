// Ring allgather: in step s (0..n-2) rank r forwards block (r-s) mod n to r+1 and receives block
// (r-s-1) mod n from r-1 straight into its place. Each rank sends (n-1) blocks.
#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void allgatherRing(Comm& c, const std::vector<void*>& blocks, const std::vector<size_t>& bytes) {
  const int n = c.size(), r = c.rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  for (int s = 0; s < n - 1; ++s) {
    const int sb = ((r - s) % n + n) % n, rb = ((r - s - 1) % n + n) % n;
    c.sendRecv(right, blocks[sb], bytes[sb], left, blocks[rb], bytes[rb]);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
