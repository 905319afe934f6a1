// Ring reduce-scatter. Step s (0..n-2): rank r sends block (r-s-1) mod n (its partial sum) to
// r+1 and receives block (r-s-2) mod n from r-1, reducing it into its own copy; after n-1 steps
// block r is complete on rank r. Steps are cut into segments so the receive buffer stays in cache.
#include <algorithm>
#include <cstring>
#include <functional>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {
constexpr size_t kSegmentBytes = 1 << 20;
}

void splitBlocks(size_t count, int n, std::vector<size_t>* off, std::vector<size_t>* cnt) {
  off->resize(n);
  cnt->resize(n);
  const size_t base = count / n, rem = count % n;
  for (int i = 0; i < n; ++i) {
    (*cnt)[i] = base + (static_cast<size_t>(i) < rem ? 1 : 0);
    (*off)[i] = i * base + std::min<size_t>(i, rem);
  }
}

void reduceScatterRing(Comm& c, void* buf, const std::vector<size_t>& off,
                       const std::vector<size_t>& cnt, DataType dtype, ReduceOp::Kind op) {
  const int n = c.size(), r = c.rank();
  if (n == 1) return;
  const size_t es = elementSize(dtype);
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  uint8_t* base = static_cast<uint8_t*>(buf);
  const size_t segElems = std::max<size_t>(1, kSegmentBytes / es);
  uint8_t* tmp = c.scratch(std::min(segElems, *std::max_element(cnt.begin(), cnt.end())) * es + 1);
  for (int s = 0; s < n - 1; ++s) {
    const int sb = ((r - s - 1) % n + n) % n, rb = ((r - s - 2) % n + n) % n;
    const size_t sn = cnt[sb], rn = cnt[rb];
    for (size_t done = 0; done < std::max(sn, rn); done += segElems) {
      const size_t sk = done < sn ? std::min(segElems, sn - done) : 0;
      const size_t rk = done < rn ? std::min(segElems, rn - done) : 0;
      c.sendRecv(right, base + (off[sb] + done) * es, sk * es, left, tmp, rk * es);
      reduceTo(base + (off[rb] + done) * es, tmp, rk, dtype, op);
    }
  }
}

void reduceScatterRingInputs(Comm& c, const std::vector<const void*>& inputs, void* out,
                             size_t count, DataType dtype, ReduceOp::Kind op,
                             const std::function<void(void*, const void*, size_t)>& scaleCopy) {
  const int n = c.size(), r = c.rank();
  const size_t es = elementSize(dtype);
  auto in = [&](int block, size_t done) {
    return static_cast<const uint8_t*>(inputs[static_cast<size_t>(block)]) + done * es;
  };
  auto load = [&](uint8_t* dst, const uint8_t* src, size_t k) {
    if (scaleCopy) {
      scaleCopy(dst, src, k);
    } else if (dst != src) {
      std::memcpy(dst, src, k * es);
    }
  };
  if (n == 1) {
    load(static_cast<uint8_t*>(out), in(0, 0), count);
    return;
  }
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  const size_t segElems = std::max<size_t>(1, kSegmentBytes / es);
  // acc holds the partial sums this rank sends next; a segment of it is overwritten with the next
  // partial only after run() returned, i.e. after its send completed.
  uint8_t* acc = n > 2 ? c.scratch(count * es + 1, 1) : nullptr;
  uint8_t* tmp = c.scratch(std::min(segElems, count) * es + 1, 0);
  uint8_t* stage = scaleCopy && n == 2 ? c.scratch(std::min(segElems, count) * es + 1, 1) : nullptr;
  for (int s = 0; s < n - 1; ++s) {
    const int sb = ((r - s - 1) % n + n) % n, rb = ((r - s - 2) % n + n) % n;
    const bool last = s == n - 2;  // then rb == r: the result goes straight to `out`
    for (size_t done = 0; done < count; done += segElems) {
      const size_t k = std::min(segElems, count - done);
      const uint8_t* src;
      if (s > 0) {
        src = acc + done * es;
      } else if (scaleCopy) {
        // Step 0 sends this rank's own (scaled) input block: scaled into the segment buffer when
        // n == 2 (no accumulator), else into the accumulator segment about to be replaced.
        uint8_t* d = n > 2 ? acc + done * es : stage;
        scaleCopy(d, in(sb, done), k);
        src = d;
      } else {
        src = in(sb, done);  // unscaled: straight from the input
      }
      c.sendRecv(right, src, k * es, left, tmp, k * es);
      uint8_t* dst = last ? static_cast<uint8_t*>(out) + done * es : acc + done * es;
      load(dst, in(rb, done), k);
      reduceTo(dst, tmp, k, dtype, op);
    }
  }
}

void reduceScatterRingWide(Comm& c, const std::vector<const void*>& inputs,
                           const std::vector<size_t>& cnt, void* out, DataType dtype, int divisor,
                           const std::function<void(void*, const void*, size_t)>& scaleCopy) {
  const int n = c.size(), r = c.rank();
  const size_t es = elementSize(dtype);
  const size_t maxCnt = *std::max_element(cnt.begin(), cnt.end());
  // Segments of kSegmentBytes on the wire: twice the elements in the half type's steps.
  const size_t segMax = std::min(std::max<size_t>(1, kSegmentBytes / es), maxCnt);
  // Segment `done` of input block b (k elements), scaled into stage `which` when scaleCopy is set.
  uint8_t* stage = scaleCopy ? c.scratch(2 * segMax * es + 1, 2) : nullptr;
  auto input = [&](int b, size_t done, size_t k, int which) -> const void* {
    const auto* p = static_cast<const uint8_t*>(inputs[static_cast<size_t>(b)]) + done * es;
    if (!scaleCopy) return p;
    uint8_t* d = stage + which * segMax * es;
    scaleCopy(d, p, k);
    return d;
  };
  if (n == 1) {
    const void* p = input(0, 0, cnt[0], 0);
    if (p != out) std::memcpy(out, p, cnt[0] * es);
    return;
  }
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  // acc holds the f32 partial sums this rank sends next (block-sized; none at n == 2).
  float* acc = n > 2 ? reinterpret_cast<float*>(c.scratch(maxCnt * sizeof(float) + 1, 1)) : nullptr;
  uint8_t* tmp = c.scratch(std::max<size_t>(kSegmentBytes, es) + 1, 0);
  for (int s = 0; s < n - 1; ++s) {
    const int sb = ((r - s - 1) % n + n) % n, rb = ((r - s - 2) % n + n) % n;
    const size_t sn = cnt[sb], rn = cnt[rb];
    const bool wide = s > 0;  // step 0 carries inputs, later steps partial sums
    const size_t wes = wide ? sizeof(float) : es;
    const size_t segElems = std::max<size_t>(1, kSegmentBytes / wes);
    const bool last = s == n - 2;  // then rb == r: the result goes straight to `out`
    for (size_t done = 0; done < std::max(sn, rn); done += segElems) {
      const size_t sk = done < sn ? std::min(segElems, sn - done) : 0;
      const size_t rk = done < rn ? std::min(segElems, rn - done) : 0;
      const void* src = wide ? static_cast<const void*>(acc + done) : input(sb, done, sk, 0);
      c.sendRecv(right, src, sk * wes, left, tmp, rk * wes);
      if (rk == 0) continue;
      const void* mine = input(rb, done, rk, 1);
      if (last) {
        addWide(static_cast<uint8_t*>(out) + done * es, false, tmp, wide, mine, false, rk, dtype,
                divisor);
      } else {
        addWide(acc + done, true, tmp, wide, mine, false, rk, dtype, 1);
      }
    }
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
