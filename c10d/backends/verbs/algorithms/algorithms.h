// The collective algorithms of the verbs backend, each written once over Comm (comm.h), one file
// per algorithm. The tables in algo_table.cc name them; AlgoSelector::run picks one and runs it.
//
// Conventions: every function is collective over the Comm's group and blocks the calling thread
// until this rank's part is done (or throws TimeoutError / CommError). Buffers are raw bytes plus
// an element count and dtype; `op` is already a base kind (SUM for PREMUL_SUM/AVG: the
// entries and table adapters scale inputs and divide results).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/backends/verbs/comm.h"
#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

// The fold of a non-power-of-two group (recursive doubling, Rabenseifner; as MPICH): p is the
// largest power of two <= n and rem = n - p; each even rank below 2 * rem hands its buffer to the
// odd rank above it and sits out until that rank sends the result back; the p others run the
// algorithm under virtual ranks (real() maps one back).
struct Fold {
  int p = 1, rem = 0;
  explicit Fold(int n) {
    while (p * 2 <= n) p *= 2;
    rem = n - p;
  }
  int real(int v) const { return v < rem ? v * 2 + 1 : v + rem; }
  int virtualRank(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  // On an even rank below 2 * rem: hands `data` over, receives the result into it, returns true.
  bool sitOut(Comm& c, void* data, size_t bytes) const {
    const int r = c.rank();
    if (r >= 2 * rem || r % 2 != 0) return false;
    c.send(r + 1, data, bytes);
    c.recv(r + 1, data, bytes);
    return true;
  }
};

// ---- allreduce (in place on data) ----
// Entry: applies PREMUL_SUM's scale, then runs the algorithm the table picks (AVG divides there).
// `out` receives the reduction of every rank's `in` (in == out: in place; otherwise disjoint, and
// `in` is left as it was). The shm algorithm reads `in` and writes `out` itself; the others run in
// place on `out` after a copy (or PREMUL_SUM's scaled copy) of `in`.
// `halfAccumF32`: C10D_HALF_ACCUM=f32 (CollArgs::wide).
void allreduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
               DataType dtype, const ReduceOp& op, size_t smallBytes, bool halfAccumF32);
void allreduceRing(Comm& c, void* data, size_t count, DataType dtype, ReduceOp::Kind op);
void allreduceRecursiveDoubling(Comm& c, void* data, size_t count, DataType dtype,
                                ReduceOp::Kind op);
// Reduce-scatter by recursive halving + allgather by recursive doubling (non-powers of two fold).
void allreduceRabenseifner(Comm& c, void* data, size_t count, DataType dtype, ReduceOp::Kind op);
// The same three for an f16/bf16 sum kept in f32 (CollArgs::wide, reduce_kernels.h): data ends as
// round(sum / divisor). A message carries f32 only where it carries a partial sum: a rank's first
// send of its own input (a ring's step 0, the first exchange, a fold) goes as it is, so at n == 2
// the ring and Rabenseifner move no more bytes than in the half type; the allgathers move the
// rounded half values.
void allreduceRingWide(Comm& c, void* data, size_t count, DataType dtype, int divisor);
void allreduceRecursiveDoublingWide(Comm& c, void* data, size_t count, DataType dtype, int divisor);
void allreduceRabenseifnerWide(Comm& c, void* data, size_t count, DataType dtype, int divisor);
// Needs c.hosts() with multiHost: shm inside hosts, the network across (allreduce_hierarchical.cc).
void allreduceHierarchical(Comm& c, const AlgoSelector& sel, void* data, size_t count,
                           DataType dtype, ReduceOp::Kind op);
// Needs c.slots(). Divides by the group size itself when `avg` (so it happens once per element).
// Reads `in` into the staging slots and writes the result to `out` (in == out, or disjoint).
// `wide`: an f16/bf16 SUM summed from every rank's slot in f32 and rounded once (no extra bytes).
void allreduceShm(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                  ReduceOp::Kind op, bool avg, size_t smallBytes, bool wide);
// Needs c.slots(). Reduce to `root` through the staging slots: per chunk, the other ranks copy
// theirs in, one barrier, and the root reduces its own input and their slots straight into `out`
// while they copy the next chunk (one copy per non-root byte, one reduction pass on the root).
void reduceShm(Comm& c, const void* in, void* out, size_t count, DataType dtype, ReduceOp::Kind op,
               bool avg, int root, bool wide);

// ---- reduce_scatter: buf holds size() blocks, block r at element offset off[r] with cnt[r]
// elements; on return block rank() holds the reduction (other blocks are clobbered). ----
void reduceScatterRing(Comm& c, void* buf, const std::vector<size_t>& off,
                       const std::vector<size_t>& cnt, DataType dtype, ReduceOp::Kind op);
// The same ring reading the blocks straight from `inputs` (size() blocks of `count` elements, left
// untouched) and writing block rank()'s reduction to `out`, through one block-sized accumulator
// (scratch 1; none at n == 2) and a segment (scratch 0): no copy of the whole input, no per-op
// allocation. `scaleCopy(dst, src, k)`, when set, loads k input elements scaled (PREMUL_SUM);
// unset, inputs are read as they are. `out` may be exactly inputs[rank()] (in place); it must not
// overlap any other input block.
void reduceScatterRingInputs(Comm& c, const std::vector<const void*>& inputs, void* out,
                             size_t count, DataType dtype, ReduceOp::Kind op,
                             const std::function<void(void*, const void*, size_t)>& scaleCopy);
// The ring for an f16/bf16 sum kept in f32 (allreduceRingWide above): block b of this rank's
// input is inputs[b] (cnt[b] elements, scaled by `scaleCopy` when set); block rank()'s
// round(sum / divisor) goes to `out` (which may be exactly inputs[rank()]). Step 0 sends the
// input block as it is, later steps f32 partial sums (scratch 0, 1 and, with scaleCopy, 2).
void reduceScatterRingWide(Comm& c, const std::vector<const void*>& inputs,
                           const std::vector<size_t>& cnt, void* out, DataType dtype, int divisor,
                           const std::function<void(void*, const void*, size_t)>& scaleCopy);
// Across hosts (c.hosts() balanced): reduce-scatter rings inside each host, then one per column of
// hosts (reduce_scatter_hierarchical.cc; uses scratch buffer 2); other layouts: the ring above.
void reduceScatterHierarchical(Comm& c, const std::vector<const void*>& inputs, void* out,
                               size_t count, DataType dtype, ReduceOp::Kind op,
                               const std::function<void(void*, const void*, size_t)>& scaleCopy);
// Splits `count` into size() near-equal blocks (the first count % size one element longer).
void splitBlocks(size_t count, int n, std::vector<size_t>* off, std::vector<size_t>* cnt);

// ---- allgather: blocks[r] (bytes[r] each) receives rank r's block; blocks[rank()] must
// already hold this rank's data. ----
void allgatherRing(Comm& c, const std::vector<void*>& blocks, const std::vector<size_t>& bytes);
// Across hosts (c.hosts() balanced): a ring per column of hosts, then rings inside each host
// (allgather_hierarchical.cc); other layouts: the ring.
void allgatherHierarchical(Comm& c, const std::vector<void*>& blocks,
                           const std::vector<size_t>& bytes);

// ---- broadcast (in place) ----
void broadcast(Comm& c, const AlgoSelector& sel, void* data, size_t bytes, int root);
void broadcastBinomial(Comm& c, void* data, size_t bytes, int root);
void broadcastChain(Comm& c, void* data, size_t bytes, int root);
void broadcastShm(Comm& c, void* data, size_t bytes, int root);

// ---- reduce to root: root's `out` receives the reduction of every rank's `in`; `in` is left as
// it was except on a root with in == out (in place). `out` is used on the root only. ----
// Entry: the algorithm the table picks (shm where a workspace exists, else binomial); each
// applies PREMUL_SUM's scale and AVG's division.
void reduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
            DataType dtype, const ReduceOp& op, int root, bool halfAccumF32);
void reduceBinomial(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                    const ReduceOp& op, int root);
// The tree for an f16/bf16 sum kept in f32: a leaf sends its input as it is, an inner rank its
// f32 partial sum; the root rounds once (AVG: after dividing).
void reduceBinomialWide(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                        const ReduceOp& op, int root);

// ---- gather / scatter (root's blocks[r], blockBytes each) ----
void gatherDirect(Comm& c, const std::vector<void*>& blocks, const void* input, size_t bytes,
                  int root);
void scatterDirect(Comm& c, const std::vector<const void*>& blocks, void* output, size_t bytes,
                   int root);

// ---- alltoall: send[r]/sendBytes[r] go to rank r, recv[r]/recvBytes[r] come from rank r ----
void alltoallPairwise(Comm& c, const std::vector<const void*>& send,
                      const std::vector<size_t>& sendBytes, const std::vector<void*>& recv,
                      const std::vector<size_t>& recvBytes);

// ---- barrier ----
void barrierDissemination(Comm& c);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
