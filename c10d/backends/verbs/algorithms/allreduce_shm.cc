// Direct shared-memory allreduce for groups whose ranks all share one host.
//
// Each rank copies a chunk (C10D_SHM_CHUNK bytes) of its input into its staging slot; after a
// barrier, rank q reduces piece q of the chunk straight from every rank's slot (one pass over n
// sources) into its own slot, and after the next barrier every rank copies all finished pieces
// out, into the output (the input, in place; another buffer out of place, at no extra cost:
// allreduceInto). That is a reduce-scatter + allgather with no intermediate messages: each rank
// moves ~5x the chunk through memory (copy in 2, reduce 1 + 1/n, copy out 2). Slots rotate over
// three sets (shm_transport.h), so the barrier that publishes chunk j's input also says chunk j-1's
// pieces are reduced: one barrier per chunk, plus one at the end.
//
// Small messages (<= C10D_SMALL_BYTES) take one barrier in all: every rank reduces the whole
// chunk from all slots, in rank order, so all get identical bits. Up to kSmallSlotBytes they go
// in the small slots, which peers read with the barrier's arrival.
#include <algorithm>
#include <cstring>
#include <vector>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

// Piece q of m elements, cut at 64-byte multiples so the kernels stay vector-aligned.
void piece(size_t m, size_t es, int n, int q, size_t* begin, size_t* end) {
  const size_t unit = std::max<size_t>(1, 64 / es);
  const size_t units = (m + unit - 1) / unit;
  *begin = std::min(m, units * q / n * unit);
  *end = std::min(m, units * (q + 1) / n * unit);
}

// One source pointer per rank: on the stack up to 16 ranks (no allocation on a small op's path).
class Sources {
 public:
  explicit Sources(int n) : p_(inline_) {
    if (n > kInline) {
      heap_.resize(static_cast<size_t>(n));
      p_ = heap_.data();
    }
  }
  Sources(const Sources&) = delete;
  Sources& operator=(const Sources&) = delete;
  const void*& operator[](int i) { return p_[i]; }
  const void* const* data() const { return p_; }

 private:
  static constexpr int kInline = 16;
  const void* inline_[kInline];
  std::vector<const void*> heap_;
  const void** p_;
};

// dst = the reduction of all n sources (AVG: divided by n); an f16/bf16 sum when `wide` is summed
// in f32 and rounded once.
void reduceAll(void* dst, const void* const* srcs, int n, size_t m, DataType dtype,
               ReduceOp::Kind op, bool avg, bool wide) {
  if (wide) {
    sumSourcesWide(dst, srcs, n, m, dtype, avg ? n : 1);
    return;
  }
  reduceSources(dst, srcs, n, m, dtype, op);
  if (avg) divide(dst, m, dtype, n);
}

}  // namespace

void allreduceShm(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                  ReduceOp::Kind op, bool avg, size_t smallBytes, bool wide) {
  const StagingSlots& s = *c.slots();
  const int n = c.size(), r = c.rank();
  const size_t es = elementSize(dtype);
  const size_t chunkElems = s.slotBytes() / es;
  // Chunk j is read from `src` before chunk j - 1 is written to `d`: with in == out each region
  // is read before it is overwritten.
  const uint8_t* src = static_cast<const uint8_t*>(in);
  uint8_t* d = static_cast<uint8_t*>(out);
  Sources srcs(n);

  if (count * es <= std::min(smallBytes, s.slotBytes())) {
    const uint64_t t = s.step();
    // The smallest ride with the barrier's arrival: one cache-line transfer per peer, not two.
    const bool withArrival = count * es <= StagingSlots::kSmallSlotBytes;
    auto slot = [&](int q) { return withArrival ? s.smallSlot(q, t) : s.slot(q, t); };
    std::memcpy(slot(r), src, count * es);
    c.shmBarrier();
    for (int q = 0; q < n; ++q) srcs[q] = slot(q);
    reduceAll(d, srcs.data(), n, count, dtype, op, avg, wide);
    return;
  }

  const size_t nChunks = (count + chunkElems - 1) / chunkElems;
  const uint64_t first = s.step();
  for (size_t j = 0; j <= nChunks; ++j) {
    const uint64_t t = first + j;
    const size_t off = j * chunkElems;
    const size_t m = j < nChunks ? std::min(chunkElems, count - off) : 0;
    if (j < nChunks) std::memcpy(s.slot(r, t), src + off * es, m * es);
    c.shmBarrier();
    if (j < nChunks) {
      size_t a, b;
      piece(m, es, n, r, &a, &b);
      if (b > a) {
        // Own slot first: it is the destination (in place).
        srcs[0] = s.slot(r, t) + a * es;
        for (int q = 0, i = 1; q < n; ++q)
          if (q != r) srcs[i++] = s.slot(q, t) + a * es;
        reduceAll(s.slot(r, t) + a * es, srcs.data(), n, b - a, dtype, op, avg, wide);
      }
    }
    if (j > 0) {
      const size_t poff = (j - 1) * chunkElems;
      const size_t pm = std::min(chunkElems, count - poff);
      for (int q = 0; q < n; ++q) {
        size_t a, b;
        piece(pm, es, n, q, &a, &b);
        if (b > a) std::memcpy(d + (poff + a) * es, s.slot(q, t - 1) + a * es, (b - a) * es);
      }
    }
  }
}

void reduceShm(Comm& c, const void* in, void* out, size_t count, DataType dtype, ReduceOp::Kind op,
               bool avg, int root, bool wide) {
  const StagingSlots& s = *c.slots();
  const int n = c.size(), r = c.rank();
  const size_t es = elementSize(dtype);
  const size_t chunkElems = s.slotBytes() / es;
  const uint8_t* src = static_cast<const uint8_t*>(in);
  uint8_t* d = static_cast<uint8_t*>(out);
  // The root's own input first (reduceSources lets the destination alias only the first source:
  // in place, out == in), then the others in rank order.
  Sources srcs(n);
  const size_t nChunks = (count + chunkElems - 1) / chunkElems;
  for (size_t j = 0; j < nChunks; ++j) {
    const uint64_t t = s.step();
    const size_t off = j * chunkElems;
    const size_t m = std::min(chunkElems, count - off);
    if (r != root) std::memcpy(s.slot(r, t), src + off * es, m * es);
    // Chunk j's slots are full; the root has finished chunk j - 1 (it reduces before arriving),
    // so the slots of step t - 2 are free again for step t + 1.
    c.shmBarrier();
    if (r != root) continue;
    srcs[0] = src + off * es;
    for (int q = 0, i = 1; q < n; ++q)
      if (q != root) srcs[i++] = s.slot(q, t);
    reduceAll(d + off * es, srcs.data(), n, m, dtype, op, avg, wide);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
