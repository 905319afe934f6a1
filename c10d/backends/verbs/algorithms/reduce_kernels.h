// Reduction kernels of the verbs backend: thin wrappers over the core's reduceInto
// (c10d/core/reduce_op.h), with fused fast paths for the common case (f32/f64 SUM over several
// sources in one pass, so an n-way shm reduction reads each source once and writes the result
// once).
//
// Pure functions; no threads.
#pragma once

#include <cstddef>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

// dst[i] = dst[i] op src[i].
void reduceTo(void* dst, const void* src, size_t n, DataType dtype, ReduceOp::Kind op);

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[k-1][i], in that order (so every rank that
// computes it gets the same bits). dst may be srcs[0]; otherwise it must not overlap any source.
void reduceSources(void* dst, const void* const* srcs, int k, size_t n, DataType dtype,
                   ReduceOp::Kind op);

// ---- f16 / bf16 sums accumulated in f32 (C10D_HALF_ACCUM=f32) ----
// A half-type SUM (and AVG, PREMUL_SUM's sum) keeps its partial sums in f32 and rounds once, at
// the end: round(sum / divisor) with divisor 1 for SUM, the group size for AVG, rounded once
// (core's narrowHalf: the quotient goes through f32 rounded to odd, which cannot round twice),
// so the only roundings left are the f32 additions themselves: none while the
// partial sums fit f32's 24 bits, which the sum of n half values does whenever their exponents
// span fewer than 24 - 11 - log2(n) binades (f16; bf16: 24 - 8 - log2(n)).

inline bool isHalf(DataType dt) {
  return dt == DataType::kFloat16 || dt == DataType::kBFloat16;
}

// out[i] = a[i] + b[i], where a and b are each f32 or `half` (read as real numbers, added in f32);
// the result is stored as f32 when outWide, else rounded once to `half` after dividing by
// `divisor`. out may be exactly a or b (same type); no other overlap.
void addWide(void* out, bool outWide, const void* a, bool aWide, const void* b, bool bWide,
             size_t n, DataType half, int divisor);

// dst[i] = round((srcs[0][i] + ... + srcs[k-1][i]) / divisor), all of type `half`, summed in f32
// in that order. dst may be srcs[0]; otherwise it must not overlap any source.
void sumSourcesWide(void* dst, const void* const* srcs, int k, size_t n, DataType half,
                    int divisor);

// dst[i] = src[i] from `half` to f32 (exact).
void widen(float* dst, const void* src, size_t n, DataType half);

// dst[i] = round(src[i] / divisor) from f32 to `half` (divisor 1: a plain conversion).
void narrow(void* dst, const float* src, size_t n, DataType half, int divisor);

// PREMUL_SUM and AVG reduce as SUM; the others as themselves.
inline ReduceOp::Kind baseKind(ReduceOp::Kind k) {
  return (k == ReduceOp::PREMUL_SUM || k == ReduceOp::AVG) ? ReduceOp::SUM : k;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
