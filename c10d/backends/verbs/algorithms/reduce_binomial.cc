// reduce entry (the table picks shm or binomial, algo_table.cc), and the binomial-tree reduce to
// root. In relative ranks (v = rank - root mod n), v receives from v + 2^k for each 2^k below its
// lowest set bit (in increasing k), reduces, and sends the partial result to v - lowbit(v).
// Non-root ranks work on a scratch copy so their input stays untouched; the root reduces into its
// output (its input, in place).
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void reduce(Comm& c, const AlgoSelector& sel, const void* in, void* out, size_t count,
            DataType dtype, const ReduceOp& op, int root, bool halfAccumF32) {
  if (count == 0) return;
  CollArgs a = CollArgs::reduction(in, out, count, dtype, op);
  a.root = root;
  a.halfAccumF32 = halfAccumF32;
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

void reduceBinomialWide(Comm& c, const void* in, void* out, size_t count, DataType dtype,
                        const ReduceOp& op, int root) {
  if (count == 0) return;
  const int n = c.size();
  const size_t bytes = count * elementSize(dtype);
  const int v = (c.rank() - root + n) % n;
  const void* mine = in;
  if (op.kind == ReduceOp::PREMUL_SUM) {  // each rank's input scaled (and rounded) first
    uint8_t* scaled = c.scratch(bytes, 2);
    scale(scaled, in, count, dtype, op.scale);
    mine = scaled;
  }
  float* acc = reinterpret_cast<float*>(c.scratch(count * sizeof(float), 1));
  uint8_t* tmp = n > 1 ? c.scratch(count * sizeof(float), 0) : nullptr;
  bool wide = false;  // acc holds this rank's partial sum (it received something)
  for (int mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      const int parent = ((v - mask) + root) % n;
      if (wide) {
        c.send(parent, acc, count * sizeof(float));
      } else {
        c.send(parent, mine, bytes);
      }
      break;
    }
    const int child = v + mask;
    if (child < n) {
      // The child received before sending (it is inner) iff it has a child of its own: its
      // lowest set bit is `mask`, so it has one iff mask > 1 and child + 1 < n.
      const bool childWide = mask > 1 && child + 1 < n;
      c.recv((child + root) % n, tmp, childWide ? count * sizeof(float) : bytes);
      if (wide) {
        addWide(acc, true, acc, true, tmp, childWide, count, dtype, 1);
      } else {
        addWide(acc, true, mine, false, tmp, childWide, count, dtype, 1);
      }
      wide = true;
    }
  }
  if (v != 0) return;
  if (wide) {
    narrow(out, acc, count, dtype, op.kind == ReduceOp::AVG ? n : 1);
  } else if (out != mine) {
    std::memcpy(out, mine, bytes);
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
