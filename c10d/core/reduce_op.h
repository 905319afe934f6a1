// Reduction operators.
//
// PREMUL_SUM multiplies each rank's input by `scale` before summing (NCCL's
// ncclRedOpCreatePreMulSum, torch's _make_nccl_premul_sum). AVG is SUM divided by the group size;
// on integer types it rounds toward zero. BAND/BOR/BXOR are defined for integer types and bool
// only.
//
// A backend that cannot do an (op, dtype, device) triple says so through
// ProcessGroup::supports(); the ProcessGroup then raises InvalidArgument before communicating.
#pragma once

#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct ReduceOp {
  enum Kind : uint8_t { SUM = 0, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM };
  static constexpr int kNumKinds = 9;

  Kind kind = SUM;
  double scale = 1.0;  // only for PREMUL_SUM

  ReduceOp() = default;
  ReduceOp(Kind k) : kind(k) {}  // NOLINT: implicit on purpose, so `ReduceOp::MAX` is a ReduceOp
  static ReduceOp premulSum(double s) {
    ReduceOp op(PREMUL_SUM);
    op.scale = s;
    return op;
  }
  bool operator==(const ReduceOp& o) const { return kind == o.kind && scale == o.scale; }
  bool operator!=(const ReduceOp& o) const { return !(*this == o); }
};

// "sum", "avg", "prod", "min", "max", "band", "bor", "bxor", "premul_sum".
const char* toString(ReduceOp::Kind k);
std::string toString(const ReduceOp& op);
// Parses the names above, plus nccl-tests' "mulsum" for PREMUL_SUM; throws InvalidArgument.
ReduceOp::Kind parseReduceOp(const std::string& name);

// True when `op` is defined on `dtype` at all (bitwise ops only on integers and bool; every
// other op on every type). Backends may support less.
bool isDefined(ReduceOp::Kind op, DataType dtype);

// Reference CPU reduction: dst[i] = dst[i] (op) src[i] for `n` elements of `dtype`, reading
// f16/bf16 as real numbers. PREMUL_SUM here only sums; callers scale inputs with `scale()`.
// AVG here only sums; callers divide with `divide()`. Used by CPU backends and tests.
void reduceInto(void* dst, const void* src, size_t n, DataType dtype, ReduceOp::Kind op);
// dst[i] = src[i] * factor for n elements (for PREMUL_SUM's scale).
void scale(void* dst, const void* src, size_t n, DataType dtype, double factor);
// dst[i] /= divisor (for AVG); integer types divide toward zero.
void divide(void* dst, size_t n, DataType dtype, int64_t divisor);

// f16/bf16 <-> f32 in bulk, 8 lanes at a time where the CPU has AVX2 + F16C (for sums kept in
// f32). widenHalf is exact. narrowHalf stores src[i] / divisor (divisor in [1, 2^24]) rounded
// once to the half type: the f32 quotient is first rounded to odd (its exact remainder by FMA
// says which side it lies on), which makes the half rounding after it the only one.
void widenHalf(float* dst, const void* src, size_t n, DataType dtype);
void narrowHalf(void* dst, const float* src, size_t n, DataType dtype, int64_t divisor);

C10D_NAMESPACE_END
}  // namespace c10d
