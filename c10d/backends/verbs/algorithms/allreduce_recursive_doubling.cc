// Recursive-doubling allreduce (latency-optimal: log2(n) rounds of whole-buffer exchanges).
//
// Non-powers of two fold first (as MPICH does): with p the largest power of two <= n and
// rem = n - p, each even rank below 2*rem sends its buffer to the odd rank above it and sits out;
// the p remaining ranks exchange with partner (vrank ^ mask) and reduce; the odd ranks finally
// send the result back. Each exchange reduces the same two values on both sides, always as
// (lower vrank's value) op (higher's): IEEE results are commutative in value but not in bits
// (NaN + NaN and min(-0, +0) return the first operand), so a fixed order is what makes every rank
// end with the same bits.
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void allreduceRecursiveDoubling(Comm& c, void* data, size_t count, DataType dtype,
                                ReduceOp::Kind op) {
  const int n = c.size(), r = c.rank();
  const size_t bytes = count * elementSize(dtype);
  const Fold fold(n);
  const int p = fold.p, rem = fold.rem;
  uint8_t* tmp = c.scratch(bytes);
  // data = first op second, where `second` is data itself when `mineFirst`, else first is tmp.
  auto combine = [&](bool mineFirst) {
    if (mineFirst) {
      reduceTo(data, tmp, count, dtype, op);
    } else {
      reduceTo(tmp, data, count, dtype, op);
      std::memcpy(data, tmp, bytes);
    }
  };
  if (fold.sitOut(c, data, bytes)) return;
  if (r < 2 * rem) {
    c.recv(r - 1, tmp, bytes);
    combine(false);  // the lower rank's value first
  }
  const int vrank = fold.virtualRank(r);
  for (int mask = 1; mask < p; mask <<= 1) {
    const int peer = fold.real(vrank ^ mask);
    c.sendRecv(peer, data, bytes, peer, tmp, bytes);
    combine(vrank < (vrank ^ mask));
  }
  if (r < 2 * rem) c.send(r - 1, data, bytes);
}

void allreduceRecursiveDoublingWide(Comm& c, void* data, size_t count, DataType dtype,
                                    int divisor) {
  const int n = c.size(), r = c.rank();
  const size_t bytes = count * elementSize(dtype), wideBytes = count * sizeof(float);
  const Fold fold(n);
  const int p = fold.p, rem = fold.rem;
  float* acc = reinterpret_cast<float*>(c.scratch(wideBytes, 1));
  uint8_t* tmp = c.scratch(wideBytes, 0);
  bool wide = false;  // acc holds this rank's partial sum
  if (fold.sitOut(c, data, bytes)) return;
  if (r < 2 * rem) {
    c.recv(r - 1, tmp, bytes);
    addWide(acc, true, tmp, false, data, false, count, dtype, 1);  // the lower rank's value first
    wide = true;
  }
  const int vrank = fold.virtualRank(r);
  for (int mask = 1; mask < p; mask <<= 1) {
    const int pv = vrank ^ mask, peer = fold.real(pv);
    // The peer sends f32 once it has summed anything: after the first exchange, or from the
    // start where it took in a folded rank's input.
    const bool peerWide = mask > 1 || pv < rem;
    c.sendRecv(peer, wide ? static_cast<const void*>(acc) : data, wide ? wideBytes : bytes, peer,
               tmp, peerWide ? wideBytes : bytes);
    const void* mine = wide ? static_cast<const void*>(acc) : data;
    // The lower vrank's value first, as above, so both partners get the same bits.
    if (vrank < pv) {
      addWide(acc, true, mine, wide, tmp, peerWide, count, dtype, 1);
    } else {
      addWide(acc, true, tmp, peerWide, mine, wide, count, dtype, 1);
    }
    wide = true;
  }
  narrow(data, acc, count, dtype, divisor);
  if (r < 2 * rem) c.send(r - 1, data, bytes);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
