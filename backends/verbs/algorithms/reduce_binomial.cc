// reduce entry (the table picks shm or binomial, algo_table.cc), and the binomial-tree reduce to
// root. In relative ranks (v = rank - root mod n), v receives from v + 2^k for each 2^k below its
// lowest set bit (in increasing k), reduces, and sends the partial result to v - lowbit(v).
// Non-root ranks work on a scratch copy so their input stays untouched; the root reduces into its
// output (its input, in place).
#include <cstring>

#include "backends/verbs/algorithms/algorithms.h"
#include "backends/verbs/algorithms/reduce_kernels.h"

namespace c10d {
namespace verbs {

void reduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
            DataType dtype, const ReduceOp& op, int root) {
  if (count == 0) return;
  CollArgs a = CollArgs::reduction(in, out, count, dtype, op);
  a.root = root;
  if (c.size() == 1) {
    reduceBinomial(c, in, out, count, dtype, op, root);  // the copy / scale it does alone
    return;
  }
  sel.run(Collective::kReduce, c, a);
}

void reduceBinomial(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                    const ReduceOp& op, int root) {
  if (count == 0) return;
  const int n = c.size();
  const size_t bytes = count * elementSize(dtype);
  const int v = (c.rank() - root + n) % n;
  const ReduceOp::Kind k = baseKind(op.kind);
  uint8_t* acc = static_cast<uint8_t*>(out);
  // The root out of place reads `in` in its first reduction instead of copying it into `out`
  // first (one pass less); `first` says that reduction is still to come.
  bool first = false;
  if (v != 0) {
    acc = c.scratch(bytes, 1);
    if (op.kind == ReduceOp::PREMUL_SUM)
      scale(acc, in, count, dtype, op.scale);
    else
      std::memcpy(acc, in, bytes);
  } else if (op.kind == ReduceOp::PREMUL_SUM) {
    scale(acc, in, count, dtype, op.scale);
  } else if (in != out) {
    first = n > 1;
    if (!first) std::memcpy(acc, in, bytes);
  }
  uint8_t* tmp = n > 1 ? c.scratch(bytes, 0) : nullptr;
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (v & mask) {
      c.send(((v - mask) + root) % n, acc, bytes);
      break;
    }
    if (v + mask < n) {
      c.recv((v + mask + root) % n, tmp, bytes);
      if (first) {
        const void* srcs[2] = {in, tmp};
        reduceSources(acc, srcs, 2, count, dtype, k);
        first = false;
      } else {
        reduceTo(acc, tmp, count, dtype, k);
      }
    }
  }
  if (v == 0 && op.kind == ReduceOp::AVG) divide(acc, count, dtype, n);
}

}  // namespace verbs
}  // namespace c10d
