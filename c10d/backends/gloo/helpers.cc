#include "c10d/backends/gloo/helpers.h"

#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {

ReduceFunc makeReduceFunc(DataType dtype, ReduceOp::Kind kind) {
  if (kind == ReduceOp::AVG || kind == ReduceOp::PREMUL_SUM) kind = ReduceOp::SUM;
  const size_t es = elementSize(dtype);
  return [dtype, kind, es](void* out, const void* a, const void* b, size_t n) {
    // Every op here is commutative, so whichever input `out` aliases can be the accumulator.
    if (out == a) {
      reduceInto(out, b, n, dtype, kind);
    } else if (out == b) {
      reduceInto(out, a, n, dtype, kind);
    } else {
      std::memcpy(out, a, n * es);
      reduceInto(out, b, n, dtype, kind);
    }
  };
}

size_t flatten(const std::vector<Tensor>& tensors, uint8_t* dst) {
  size_t off = 0;
  for (const Tensor& t : tensors) {
    if (t.nbytes() > 0) std::memcpy(dst + off, t.data, t.nbytes());
    off += t.nbytes();
  }
  return off;
}

void unflatten(const uint8_t* src, const std::vector<Tensor>& tensors) {
  size_t off = 0;
  for (const Tensor& t : tensors) {
    if (t.nbytes() > 0) std::memcpy(t.data, src + off, t.nbytes());
    off += t.nbytes();
  }
}

size_t totalBytes(const std::vector<Tensor>& tensors) {
  size_t n = 0;
  for (const Tensor& t : tensors) n += t.nbytes();
  return n;
}

void preReduce(void* data, size_t numel, DataType dtype, const ReduceOp& op) {
  if (op.kind == ReduceOp::PREMUL_SUM && numel > 0) scale(data, data, numel, dtype, op.scale);
}

void postReduce(void* data, size_t numel, DataType dtype, const ReduceOp& op, int groupSize) {
  if (op.kind == ReduceOp::AVG && numel > 0) divide(data, numel, dtype, groupSize);
}

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
