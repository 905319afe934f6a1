// Pairwise-exchange alltoall: in step k (1..n-1) rank r sends its block for (r+k) mod n and
// receives the block from (r-k) mod n, so every stream carries one message per step and no rank
// is a hot spot. Uneven sizes are fine.
//
// The streams carry no lengths, so the ranks first agree on them: each rank sends every peer q
// {bytes it sends q, bytes it expects from q} (all at once, 16 bytes each) and compares q's pair
// with its own. Both ranks of a pair that disagree see it before any data moves; that pair then
// exchanges no data in either direction (its streams stay in step, nothing is read or written past
// a block), every other pair completes, and both ranks raise InvalidArgument naming the pair and
// the two sizes. The group stays usable.
#include <cstdint>
#include <cstring>
#include <string>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

struct BlockSizes {
  uint64_t sends;    // bytes the sender sends the receiver of this header
  uint64_t expects;  // bytes the sender expects from the receiver of this header
};

std::string disagreement(int from, int to, uint64_t sends, uint64_t expects) {
  return detail::str("rank ", from, " sends ", sends, " bytes to rank ", to, ", but rank ", to,
                     " expects ", expects, " bytes from rank ", from);
}

}  // namespace

void alltoallPairwise(Comm& c, const std::vector<const void*>& send,
                      const std::vector<size_t>& sendBytes, const std::vector<void*>& recv,
                      const std::vector<size_t>& recvBytes) {
  const int n = c.size(), r = c.rank();
  std::vector<BlockSizes> mine(n), theirs(n);
  std::vector<P2POp> hdr;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    mine[q] = BlockSizes{sendBytes[q], recvBytes[q]};
    hdr.push_back(P2POp{true, q, reinterpret_cast<uint8_t*>(&mine[q]), sizeof(BlockSizes), 0});
    hdr.push_back(P2POp{false, q, reinterpret_cast<uint8_t*>(&theirs[q]), sizeof(BlockSizes), 0});
  }
  if (!hdr.empty()) c.run(hdr);
  std::vector<bool> agree(n, true);
  std::string bad;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    std::string why;
    if (theirs[q].sends != recvBytes[q]) why = disagreement(q, r, theirs[q].sends, recvBytes[q]);
    if (theirs[q].expects != sendBytes[q])
      why += (why.empty() ? "" : "; ") + disagreement(r, q, sendBytes[q], theirs[q].expects);
    if (why.empty()) continue;
    agree[q] = false;
    bad += (bad.empty() ? "" : "; ") + why;
  }

  if (recvBytes[r] > 0 && recv[r] != send[r]) std::memmove(recv[r], send[r], recvBytes[r]);
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    c.sendRecv(to, send[to], agree[to] ? sendBytes[to] : 0, from, recv[from],
               agree[from] ? recvBytes[from] : 0);
  }
  if (!bad.empty()) {
    C10D_THROW(InvalidArgument, c.what(), " on rank ", r, ": the ranks' splits disagree: ", bad,
               " (no data was exchanged between those ranks)");
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
