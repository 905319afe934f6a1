// The verbs algorithm tables: for each collective, the algorithms that implement it (with the
// adapter that runs each from CollArgs) and the default rules. algo_select.h says how they are
// read and why the defaults are what they are.
#include <array>
#include <cstring>
#include <functional>
#include <vector>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

constexpr size_t kInf = SIZE_MAX;
constexpr size_t KiB = 1024;

// ---- allreduce: `allreduce()` (allreduce.cc) has applied PREMUL_SUM's scale already. ----

void allreduceShmFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  allreduceShm(c, a.in, a.out, a.count, a.dtype, baseKind(a.op.kind), a.op.kind == ReduceOp::AVG,
               a.smallBytes, a.wide());
}

// AVG's divisor of a sum kept in f32 (applied before its one rounding).
int divisorOf(const Comm& c, const CollArgs& a) {
  return a.op.kind == ReduceOp::AVG ? c.size() : 1;
}

// The stream algorithms run in place on the output after a copy of the input; `Wide` for an
// f16/bf16 sum kept in f32.
template <void (*Algorithm)(Comm&, void*, size_t, DataType, ReduceOp::Kind),
          void (*Wide)(Comm&, void*, size_t, DataType, int)>
void allreduceInPlaceFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  if (a.in != a.out) std::memcpy(a.out, a.in, a.bytes);
  if (a.wide()) {
    Wide(c, a.out, a.count, a.dtype, divisorOf(c, a));
    return;
  }
  Algorithm(c, a.out, a.count, a.dtype, baseKind(a.op.kind));
  if (a.op.kind == ReduceOp::AVG) divide(a.out, a.count, a.dtype, c.size());
}

void allreduceHierarchicalFn(Comm& c, const CollArgs& a, const AlgoSelector& sel) {
  if (a.wide()) {
    // The whole buffer in f32 through the f32 algorithms (twice the bytes at every level), one
    // rounding at the end.
    std::vector<float> f(a.count);
    widen(f.data(), a.in, a.count, a.dtype);
    allreduceHierarchical(c, sel, f.data(), a.count, DataType::kFloat32, ReduceOp::SUM);
    narrow(a.out, f.data(), a.count, a.dtype, divisorOf(c, a));
    return;
  }
  if (a.in != a.out) std::memcpy(a.out, a.in, a.bytes);
  allreduceHierarchical(c, sel, a.out, a.count, a.dtype, baseKind(a.op.kind));
  if (a.op.kind == ReduceOp::AVG) divide(a.out, a.count, a.dtype, c.size());
}

// ---- reduce ----

void reduceShmFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  const void* in = a.in;
  if (a.op.kind == ReduceOp::PREMUL_SUM) {
    // Scaled into the output on the root; elsewhere into scratch (the input stays as it was).
    void* scaled = c.rank() == a.root ? a.out : c.scratch(a.bytes, 1);
    scale(scaled, in, a.count, a.dtype, a.op.scale);
    in = scaled;
  }
  reduceShm(c, in, a.out, a.count, a.dtype, baseKind(a.op.kind), a.op.kind == ReduceOp::AVG, a.root,
            a.wide());
}

void reduceBinomialFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  if (a.wide()) {
    reduceBinomialWide(c, a.in, a.out, a.count, a.dtype, a.op, a.root);
  } else {
    reduceBinomial(c, a.in, a.out, a.count, a.dtype, a.op, a.root);
  }
}

// ---- broadcast ----

template <void (*Algorithm)(Comm&, void*, size_t, int)>
void broadcastFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  Algorithm(c, a.out, a.bytes, a.root);
}

// ---- block collectives ----

using ScaleCopy = std::function<void(void*, const void*, size_t)>;

// AVG divides here (after the selector returns, ProcessGroupVerbs::reduceScatterFlat).
template <void (*Algorithm)(Comm&, const std::vector<const void*>&, void*, size_t, DataType,
                            ReduceOp::Kind, const ScaleCopy&)>
void reduceScatterFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  static const ScaleCopy kNoScale;
  const ScaleCopy& sc = a.scaleCopy != nullptr ? *a.scaleCopy : kNoScale;
  if (!a.wide()) {
    Algorithm(c, *a.inBlocks, a.out, a.count, a.dtype, baseKind(a.op.kind), sc);
    if (a.op.kind == ReduceOp::AVG) divide(a.out, a.count, a.dtype, c.size());
    return;
  }
  if (Algorithm == reduceScatterRingInputs) {
    reduceScatterRingWide(c, *a.inBlocks, std::vector<size_t>(c.size(), a.count), a.out, a.dtype,
                          divisorOf(c, a), sc);
    return;
  }
  // Others: every input block in f32 through the f32 algorithm, one rounding at the end.
  const size_t n = a.inBlocks->size();
  std::vector<float> f(a.count * (n + 1));
  std::vector<const void*> blocks(n);
  std::vector<uint8_t> scaled(sc ? a.bytes : 0);
  for (size_t r = 0; r < n; ++r) {
    const void* in = (*a.inBlocks)[r];
    if (sc) {
      sc(scaled.data(), in, a.count);
      in = scaled.data();
    }
    widen(f.data() + r * a.count, in, a.count, a.dtype);
    blocks[r] = f.data() + r * a.count;
  }
  float* out = f.data() + n * a.count;
  Algorithm(c, blocks, out, a.count, DataType::kFloat32, ReduceOp::SUM, kNoScale);
  narrow(a.out, out, a.count, a.dtype, divisorOf(c, a));
}

template <void (*Algorithm)(Comm&, const std::vector<void*>&, const std::vector<size_t>&)>
void allgatherFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  Algorithm(c, *a.outBlocks, *a.outBlockBytes);
}

void gatherDirectFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  gatherDirect(c, *a.outBlocks, a.in, a.bytes, a.root);
}

void scatterDirectFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  scatterDirect(c, *a.inBlocks, a.out, a.bytes, a.root);
}

void alltoallPairwiseFn(Comm& c, const CollArgs& a, const AlgoSelector&) {
  alltoallPairwise(c, *a.inBlocks, *a.inBlockBytes, *a.outBlocks, *a.outBlockBytes);
}

// ---- barrier ----

void barrierShmFn(Comm& c, const CollArgs&, const AlgoSelector&) {
  c.shmBarrier();
}

void barrierDisseminationFn(Comm& c, const CollArgs&, const AlgoSelector&) {
  barrierDissemination(c);
}

using Tables = std::array<CollectiveTable, kNumCollectives>;

Tables makeTables() {
  using C = Collective;
  using A = Algo;
  Tables t = {{
      {C::kAllreduce,
       {
           {A::kShm, Needs::kShm, allreduceShmFn,
            "direct reduce from every rank's staging slot, one sync per chunk (one in all below "
            "C10D_SMALL_BYTES); identical bits on every rank"},
           {A::kHierarchical, Needs::kMultiHost, allreduceHierarchicalFn,
            "shm inside hosts, the flat algorithm between them (each network byte once per host)"},
           {A::kRecursiveDoubling, Needs::kNothing,
            allreduceInPlaceFn<allreduceRecursiveDoubling, allreduceRecursiveDoublingWide>,
            "log2(n) exchanges of the whole buffer: latency-bound sizes"},
           {A::kRabenseifner, Needs::kNothing,
            allreduceInPlaceFn<allreduceRabenseifner, allreduceRabenseifnerWide>,
            "recursive-halving reduce-scatter + recursive-doubling allgather"},
           {A::kRing, Needs::kNothing, allreduceInPlaceFn<allreduceRing, allreduceRingWide>,
            "reduce-scatter + allgather ring: 2(n-1)/n of the buffer per rank"},
       },
       {
           {0, kInf, A::kShm},
           {64 * KiB + 1, kInf, A::kHierarchical},
           {0, kInf, A::kRecursiveDoubling, Shape::kFewerElementsThanRanks},
           {0, 32 * KiB + 1, A::kRecursiveDoubling, Shape::kPowerOfTwoFromFour},
           {32 * KiB + 1, kInf, A::kRabenseifner, Shape::kPowerOfTwoFromFour},
           {0, 64 * KiB + 1, A::kRecursiveDoubling},
           {64 * KiB + 1, kInf, A::kRing},
       }},
      {C::kReduceScatter,
       {
           {A::kHierarchical, Needs::kMultiHost, reduceScatterFn<reduceScatterHierarchical>,
            "rings inside each host, then a ring per column of hosts (each block leaves a host "
            "once, summed); uneven hosts: the ring"},
           {A::kRing, Needs::kNothing, reduceScatterFn<reduceScatterRingInputs>,
            "ring reading the input blocks in place, one accumulator block"},
       },
       {
           {0, kInf, A::kHierarchical},
           {0, kInf, A::kRing},
       }},
      {C::kAllgather,
       {
           {A::kHierarchical, Needs::kMultiHost, allgatherFn<allgatherHierarchical>,
            "a ring per column of hosts, then rings inside each host (each block crosses to "
            "a host once); uneven hosts: the ring"},
           {A::kRing, Needs::kNothing, allgatherFn<allgatherRing>, "ring: n-1 steps of one block"},
       },
       {
           {0, kInf, A::kHierarchical},
           {0, kInf, A::kRing},
       }},
      {C::kBroadcast,
       {
           {A::kShm, Needs::kShm, broadcastFn<broadcastShm>,
            "the root's chunks through its staging slot, one barrier per chunk"},
           {A::kBinomial, Needs::kNothing, broadcastFn<broadcastBinomial>,
            "binomial tree: log2(n) rounds"},
           {A::kChain, Needs::kNothing, broadcastFn<broadcastChain>,
            "pipelined chain in 256 KiB segments"},
       },
       {
           {0, kInf, A::kShm},
           {0, 256 * KiB + 1, A::kBinomial},
           {256 * KiB + 1, kInf, A::kChain},
       }},
      {C::kReduce,
       {
           {A::kShm, Needs::kShm, reduceShmFn,
            "the others copy into their slots, the root reduces them with its input into its "
            "output, pipelined per chunk"},
           {A::kBinomial, Needs::kNothing, reduceBinomialFn, "binomial tree to the root"},
       },
       {
           {0, kInf, A::kShm},
           {0, kInf, A::kBinomial},
       }},
      {C::kGather,
       {{A::kDirect, Needs::kNothing, gatherDirectFn, "every rank sends to the root"}},
       {{0, kInf, A::kDirect}}},
      {C::kScatter,
       {{A::kDirect, Needs::kNothing, scatterDirectFn, "the root sends to every rank"}},
       {{0, kInf, A::kDirect}}},
      {C::kAlltoall,
       {{A::kPairwise, Needs::kNothing, alltoallPairwiseFn,
         "n-1 pairwise exchanges (rank +- k), all in flight"}},
       {{0, kInf, A::kPairwise}}},
      {C::kBarrier,
       {
           {A::kShm, Needs::kShm, barrierShmFn, "futex barrier on the workspace"},
           {A::kDissemination, Needs::kNothing, barrierDisseminationFn,
            "dissemination: log2(n) rounds of zero-byte messages"},
       },
       {
           {0, kInf, A::kShm},
           {0, kInf, A::kDissemination},
       }},
  }};
  for (size_t i = 0; i < t.size(); ++i) {
    C10D_CHECK_ARG(static_cast<size_t>(t[i].id) == i, "verbs algorithm table ", i,
                   " is out of order");
    for (const Rule& r : t[i].defaults)
      C10D_CHECK_ARG(t[i].find(r.algo) != nullptr, "verbs algorithm table of ", toString(t[i].id),
                     ": a default rule names ", toString(r.algo), ", which is not listed");
  }
  return t;
}

}  // namespace

const CollectiveTable& algoTable(Collective c) {
  static const Tables tables = makeTables();
  return tables[static_cast<size_t>(c)];
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
