// Dissemination barrier: in round k (distance 2^k) rank r signals (r + 2^k) mod n and waits for
// (r - 2^k) mod n; after ceil(log2 n) rounds every rank has heard, transitively, from all.
// On shm groups the workspace's futex barrier is used instead (one shared counter).
#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void barrierDissemination(Comm& c) {
  const int n = c.size(), r = c.rank();
  uint8_t out = 1, in = 0;
  for (int d = 1; d < n; d <<= 1) c.sendRecv((r + d) % n, &out, 1, (r - d + n) % n, &in, 1);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
