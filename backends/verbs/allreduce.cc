// allreduce dispatcher: PREMUL_SUM scales the input in place first (the buffer is overwritten
// anyway), the chosen algorithm reduces with the base kind, AVG divides at the end.
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

void allreduce(Comm& c, const AlgoSelector& sel, void* data, size_t count, DataType dtype,
               const ReduceOp& op, size_t smallBytes) {
  if (count == 0) return;
  if (op.kind == ReduceOp::PREMUL_SUM) scale(data, data, count, dtype, op.scale);
  const ReduceOp::Kind k = baseKind(op.kind);
  const bool avg = op.kind == ReduceOp::AVG;
  if (c.size() == 1) return;
  const size_t bytes = count * elementSize(dtype);
  const bool multiHost = c.hosts() != nullptr && c.hosts()->multiHost;
  const Algo algo =
      sel.select(Collective::kAllreduce, bytes, count, c.size(), c.shm() != nullptr, multiHost);
  if (algo == Algo::kShm) {
    allreduceShm(c, data, count, dtype, k, avg, smallBytes);
    return;  // divided already
  }
  if (algo == Algo::kHierarchical) {
    allreduceHierarchical(c, sel, data, count, dtype, k);
  } else {
    allreduceNetwork(c, algo, data, count, dtype, k);
  }
  if (avg) divide(data, count, dtype, c.size());
}

}  // namespace verbs
}  // namespace c10d
