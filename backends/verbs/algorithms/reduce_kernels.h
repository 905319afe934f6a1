// Reduction kernels of the verbs backend: thin wrappers over the core's reduceInto
// (core/reduce_op.h), with fused fast paths for the common case (f32/f64 SUM over several
// sources in one pass, so an n-way shm reduction reads each source once and writes the result
// once).
//
// Pure functions; no threads.
#pragma once

#include <cstddef>

#include "base/types.h"
#include "core/reduce_op.h"

namespace c10d {
namespace verbs {

// dst[i] = dst[i] op src[i].
void reduceTo(void* dst, const void* src, size_t n, DataType dtype, ReduceOp::Kind op);

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[k-1][i], in that order (so every rank that
// computes it gets the same bits). dst may be srcs[0]; otherwise it must not overlap any source.
void reduceSources(void* dst, const void* const* srcs, int k, size_t n, DataType dtype,
                   ReduceOp::Kind op);

// PREMUL_SUM and AVG reduce as SUM; the others as themselves.
inline ReduceOp::Kind baseKind(ReduceOp::Kind k) {
  return (k == ReduceOp::PREMUL_SUM || k == ReduceOp::AVG) ? ReduceOp::SUM : k;
}

}  // namespace verbs
}  // namespace c10d
