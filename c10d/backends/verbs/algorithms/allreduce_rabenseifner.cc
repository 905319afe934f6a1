// Rabenseifner allreduce = reduce-scatter by recursive halving + allgather by recursive doubling,
// in place.
//
// Why: ring moves the bandwidth-optimal 2(n-1)/n of the buffer but takes 2(n-1) steps, each paying
// the transport's latency; recursive doubling takes only log2(n) steps but moves the whole buffer
// in each. Rabenseifner moves the same 2(p-1)/p as ring in 2*log2(p) steps, which wins for medium
// messages (and ties with ring at n = 2, where the two are the same exchange).
//
// With p the largest power of two <= n and rem = n - p, the extra ranks fold first (as MPICH
// does): each even rank below 2*rem sends its whole buffer to the odd rank above it, which reduces
// it, and sits out until that odd rank sends the result back. The p remaining ranks get virtual
// ranks v in [0, p) and cut the buffer into p near-equal blocks (some empty when count < p).
//   Reduce-scatter: for mask = p/2 .. 1, v and v^mask share a range of 2*mask blocks; the one
//   with the mask bit clear keeps the lower half, the other the upper; each sends the half it
//   gives away and reduces the peer's copy of the half it keeps. At the end v owns block v.
//   Allgather: for mask = 1 .. p/2, v and v^mask swap the (adjacent, mask-block) ranges they own.
// Every block is reduced on exactly one rank and then copied, so all ranks end with the same bits.
// Exchanges are cut into segments so that the receive buffer stays in cache while reducing.
#include <algorithm>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

constexpr size_t kSegmentBytes = 1 << 20;

struct Exchange {
  Comm& c;
  DataType dtype;
  ReduceOp::Kind op;
  size_t es;
  size_t segElems;
  uint8_t* tmp;

  // Sends sn elements of sbuf to `peer` while receiving rn elements from it, reduced into rbuf.
  // Both sides cut segments the same way (my sn is the peer's rn), so neither waits on the other.
  void reduce(int peer, const uint8_t* sbuf, size_t sn, uint8_t* rbuf, size_t rn) {
    for (size_t done = 0; done < std::max(sn, rn); done += segElems) {
      const size_t sk = done < sn ? std::min(segElems, sn - done) : 0;
      const size_t rk = done < rn ? std::min(segElems, rn - done) : 0;
      c.sendRecv(peer, sbuf + done * es, sk * es, peer, tmp, rk * es);
      reduceTo(rbuf + done * es, tmp, rk, dtype, op);
    }
  }
};

}  // namespace

void allreduceRabenseifner(Comm& c, void* data, size_t count, DataType dtype, ReduceOp::Kind op) {
  const int n = c.size(), r = c.rank();
  if (n == 1 || count == 0) return;
  const size_t es = elementSize(dtype);
  const size_t bytes = count * es;
  uint8_t* base = static_cast<uint8_t*>(data);
  const size_t segElems = std::max<size_t>(1, kSegmentBytes / es);
  Exchange x{c, dtype, op, es, segElems, c.scratch(std::min(segElems, count) * es + 1)};

  const Fold fold(n);
  const int p = fold.p, rem = fold.rem;
  if (fold.sitOut(c, base, bytes)) return;
  if (r < 2 * rem) {
    x.reduce(r - 1, base, 0, base, count);  // receive-only: sbuf is never read
  }
  const int v = fold.virtualRank(r);

  // Block b spans elements [off[b], off[b + 1]).
  std::vector<size_t> off, cnt;
  splitBlocks(count, p, &off, &cnt);
  off.push_back(count);
  auto at = [&](int b) { return base + off[b] * es; };
  auto elems = [&](int lo, int hi) { return off[hi] - off[lo]; };

  int lo = 0;
  for (int mask = p / 2; mask >= 1; mask >>= 1) {
    const int mid = lo + mask, hi = lo + 2 * mask;
    const int peer = fold.real(v ^ mask);
    if ((v & mask) == 0) {
      x.reduce(peer, at(mid), elems(mid, hi), at(lo), elems(lo, mid));
    } else {
      x.reduce(peer, at(lo), elems(lo, mid), at(mid), elems(mid, hi));
      lo = mid;
    }
  }
  // Now lo == v: this rank owns block v, fully reduced.
  for (int mask = 1; mask < p; mask <<= 1) {
    const int peer = fold.real(v ^ mask);
    const int plo = lo ^ mask;
    c.sendRecv(peer, at(lo), elems(lo, lo + mask) * es, peer, at(plo), elems(plo, plo + mask) * es);
    lo = std::min(lo, plo);
  }
  if (r < 2 * rem) c.send(r - 1, base, bytes);
}

void allreduceRabenseifnerWide(Comm& c, void* data, size_t count, DataType dtype, int divisor) {
  const int n = c.size(), r = c.rank();
  if (n == 1 || count == 0) return;
  const size_t es = elementSize(dtype);
  const size_t bytes = count * es;
  uint8_t* base = static_cast<uint8_t*>(data);
  uint8_t* tmp = c.scratch(std::max<size_t>(kSegmentBytes, es) + 1, 0);
  // f32 partial sums, indexed like the buffer (only the ranges this rank keeps are written).
  float* acc = reinterpret_cast<float*>(c.scratch(count * sizeof(float) + 1, 1));
  bool wide = false;  // acc holds this rank's partial sums for the range it keeps

  // Sends sn elements at element offset so (f32 from acc when wide, else the input) while
  // receiving rn elements (f32 when peerWide) summed into acc at offset ro.
  auto exchange = [&](int peer, bool peerWide, size_t so, size_t sn, size_t ro, size_t rn) {
    const size_t ses = wide ? sizeof(float) : es, res = peerWide ? sizeof(float) : es;
    // Segments of kSegmentBytes in the wider direction; both sides compute the same.
    const size_t segElems = std::max<size_t>(1, kSegmentBytes / std::max(ses, res));
    for (size_t done = 0; done < std::max(sn, rn); done += segElems) {
      const size_t sk = done < sn ? std::min(segElems, sn - done) : 0;
      const size_t rk = done < rn ? std::min(segElems, rn - done) : 0;
      const void* src = wide ? static_cast<const void*>(acc + so + done) : base + (so + done) * es;
      c.sendRecv(peer, src, sk * ses, peer, tmp, rk * res);
      const size_t at = ro + done;
      if (wide) {
        addWide(acc + at, true, acc + at, true, tmp, peerWide, rk, dtype, 1);
      } else {
        addWide(acc + at, true, base + at * es, false, tmp, peerWide, rk, dtype, 1);
      }
    }
  };

  const Fold fold(n);
  const int p = fold.p, rem = fold.rem;
  if (fold.sitOut(c, base, bytes)) return;
  if (r < 2 * rem) {
    exchange(r - 1, false, 0, 0, 0, count);  // receive-only
    wide = true;
  }
  const int v = fold.virtualRank(r);

  std::vector<size_t> off, cnt;
  splitBlocks(count, p, &off, &cnt);
  off.push_back(count);
  auto elems = [&](int lo, int hi) { return off[hi] - off[lo]; };

  int lo = 0;
  for (int mask = p / 2; mask >= 1; mask >>= 1) {
    const int mid = lo + mask, hi = lo + 2 * mask;
    const int pv = v ^ mask;
    const bool peerWide = mask < p / 2 || pv < rem;  // as in allreduceRecursiveDoublingWide
    if ((v & mask) == 0) {
      exchange(fold.real(pv), peerWide, off[mid], elems(mid, hi), off[lo], elems(lo, mid));
    } else {
      exchange(fold.real(pv), peerWide, off[lo], elems(lo, mid), off[mid], elems(mid, hi));
      lo = mid;
    }
    wide = true;
  }
  // This rank owns block v: rounded once, then gathered in the half type.
  narrow(base + off[lo] * es, acc + off[lo], cnt[lo], dtype, divisor);
  for (int mask = 1; mask < p; mask <<= 1) {
    const int peer = fold.real(v ^ mask);
    const int plo = lo ^ mask;
    c.sendRecv(peer, base + off[lo] * es, elems(lo, lo + mask) * es, peer, base + off[plo] * es,
               elems(plo, plo + mask) * es);
    lo = std::min(lo, plo);
  }
  if (r < 2 * rem) c.send(r - 1, base, bytes);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
