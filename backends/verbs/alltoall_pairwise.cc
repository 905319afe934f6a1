// Pairwise-exchange alltoall: in step k (1..n-1) rank r sends its block for (r+k) mod n and
// receives the block from (r-k) mod n, so every stream carries one message per step and no rank
// is a hot spot. Uneven sizes are fine (each block carries its own length).
#include <cstring>

#include "backends/verbs/algorithms.h"

namespace c10d {
namespace verbs {

void alltoallPairwise(Comm& c, const std::vector<const void*>& send,
                      const std::vector<size_t>& sendBytes, const std::vector<void*>& recv,
                      const std::vector<size_t>& recvBytes) {
  const int n = c.size(), r = c.rank();
  if (recvBytes[r] > 0 && recv[r] != send[r]) std::memmove(recv[r], send[r], recvBytes[r]);
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    c.sendRecv(to, send[to], sendBytes[to], from, recv[from], recvBytes[from]);
  }
}

}  // namespace verbs
}  // namespace c10d
