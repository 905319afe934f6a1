// allreduce entry: PREMUL_SUM scales the input into the output first (the output is overwritten
// anyway), then the algorithm the table picks runs (algo_table.cc; AVG divides there, once).
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void allreduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
               DataType dtype, const ReduceOp& op, size_t smallBytes, bool halfAccumF32) {
  if (count == 0) return;
  CollArgs a = CollArgs::reduction(in, out, count, dtype, op);
  a.smallBytes = smallBytes;
  a.halfAccumF32 = halfAccumF32;
  if (op.kind == ReduceOp::PREMUL_SUM) {
    scale(out, in, count, dtype, op.scale);  // the copy into `out`, scaled
    a.in = out;
    a.op = ReduceOp::SUM;
  }
  if (c.size() == 1) {
    if (a.in != out) std::memcpy(out, a.in, a.bytes);
    return;
  }
  sel.run(Collective::kAllreduce, c, a);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
