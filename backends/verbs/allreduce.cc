// allreduce dispatcher: PREMUL_SUM scales the input into the output first (the output is
// overwritten anyway), the chosen algorithm reduces with the base kind, AVG divides at the end.
#include <cstring>

#include "backends/verbs/algorithms.h"
#include "backends/verbs/reduce_kernels.h"

namespace c10d {
namespace verbs {

void allreduceNetwork(Comm& c, Algo algo, void* data, size_t count, DataType dtype,
                      ReduceOp::Kind op) {
  switch (algo) {
    case Algo::kRecursiveDoubling:
      allreduceRecursiveDoubling(c, data, count, dtype, op);
      return;
    case Algo::kRabenseifner:
      allreduceRabenseifner(c, data, count, dtype, op);
      return;
    default:
      allreduceRing(c, data, count, dtype, op);
      return;
  }
}

void allreduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
               DataType dtype, const ReduceOp& op, size_t smallBytes) {
  if (count == 0) return;
  const size_t bytes = count * elementSize(dtype);
  if (op.kind == ReduceOp::PREMUL_SUM) {
    scale(out, in, count, dtype, op.scale);  // the copy into `out`, scaled
    in = out;
  }
  const ReduceOp::Kind k = baseKind(op.kind);
  const bool avg = op.kind == ReduceOp::AVG;
  if (c.size() == 1) {
    if (in != out) std::memcpy(out, in, bytes);
    return;
  }
  const bool multiHost = c.hosts() != nullptr && c.hosts()->multiHost;
  const Algo algo =
      sel.select(Collective::kAllreduce, bytes, count, c.size(), c.shm() != nullptr, multiHost);
  if (algo == Algo::kShm) {
    allreduceShm(c, in, out, count, dtype, k, avg, smallBytes);
    return;  // divided already
  }
  if (in != out) std::memcpy(out, in, bytes);
  if (algo == Algo::kHierarchical) {
    allreduceHierarchical(c, sel, out, count, dtype, k);
  } else {
    allreduceNetwork(c, algo, out, count, dtype, k);
  }
  if (avg) divide(out, count, dtype, c.size());
}

}  // namespace verbs
}  // namespace c10d
