// Internal helpers of the gloo backend: reduction functions handed to Gloo, element-size
// dispatch, and flatten/unflatten of tensor lists. No threads, no blocking.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {

// Gloo's element-wise reduction: out = a (op) b for n elements (out may alias a or b).
using ReduceFunc = std::function<void(void*, const void*, const void*, size_t)>;

// Reduction on real values of `dtype` (f16/bf16 as numbers, bool as logic) through the core's
// reduceInto. AVG and PREMUL_SUM reduce as SUM: the caller divides / pre-scales.
ReduceFunc makeReduceFunc(DataType dtype, ReduceOp::Kind kind);

// Gloo's typed setters only use sizeof(T): calls f(T{}) with an unsigned type of the element's
// size, so every dtype (f16, bf16, bool included) moves as the right number of bytes.
template <typename F>
void dispatchBySize(DataType dtype, F&& f) {
  switch (elementSize(dtype)) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
    default:
      C10D_THROW(Error, "gloo: unexpected element size ", elementSize(dtype), " for ",
                 toString(dtype));
  }
}

// Owned scratch memory (no raw malloc): at least `bytes` bytes, aligned for any element type.
class Scratch {
 public:
  explicit Scratch(size_t bytes) : words_((bytes + 7) / 8 + 1) {}
  void* data() { return words_.data(); }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words_.data()); }

 private:
  std::vector<uint64_t> words_;
};

// Copies tensors back to back into dst; returns bytes written.
size_t flatten(const std::vector<Tensor>& tensors, uint8_t* dst);
// Copies back to back bytes from src into tensors.
void unflatten(const uint8_t* src, const std::vector<Tensor>& tensors);
size_t totalBytes(const std::vector<Tensor>& tensors);

// Applies the pre-/post-steps of AVG and PREMUL_SUM around a SUM: scale before, divide after.
void preReduce(void* data, size_t numel, DataType dtype, const ReduceOp& op);
void postReduce(void* data, size_t numel, DataType dtype, const ReduceOp& op, int groupSize);

// Gloo treats a zero timeout as an error (alltoall) or as "none"; the core allows 0 ms, which
// here means "the shortest wait".
inline Milliseconds glooTimeout(Milliseconds t) {
  return t < Milliseconds(1) ? Milliseconds(1) : t;
}

// The tag of an op: the low 32 bits of its sequence number (unique among ops in flight).
inline uint32_t tagOf(uint64_t seq) {
  return static_cast<uint32_t>(seq);
}

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
