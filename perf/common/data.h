// Deterministic test data for the perf binaries' validation (-c), and the checker.
//
// Every input element is a function of (global element index, seed, rank): small integers, so
// that sums, products, minima and maxima are exact in every data type (including half and
// bfloat16) for the group sizes the bound allows, and any rank can compute the expected result
// of a collective on its own, without communicating. Averages (and sums past a type's exact
// integer range) are compared with a tolerance per type. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// The scale PREMUL_SUM ("mulsum") applies on `rank`: 1 on even ranks, 2 on odd ones (exact).
double premulScalar(int rank);

// The value input element `index` holds on `rank` for a reduction `op` over `nranks` ranks
// (nranks bounds the value range so that the reduction stays exact).
double inputValue(size_t index, int seed, int rank, DataType dtype, ReduceOp::Kind op, int nranks);

// buf[i] = inputValue(offset + i, seed, rank, ...) for i < count.
void fillInput(void* buf, size_t count, size_t offset, DataType dtype, ReduceOp::Kind op, int seed,
               int rank, int nranks);

// buf[i] = op over r < nranks of inputValue(offset + i, seed, r, ...): the expected result of a
// reduction (integer types wrap as the type does; AVG divides, toward zero on integers).
void fillReduced(void* buf, size_t count, size_t offset, DataType dtype, ReduceOp::Kind op,
                 int seed, int nranks);

// Number of elements of `got` that differ from `expected` (exactly for integers, beyond the
// type's tolerance for floating point; NaN never matches).
int64_t countWrong(const void* got, const void* expected, size_t count, DataType dtype);

// Makes element i of `buf` wrong beyond any tolerance (for C10D_PERF_INJECT_ERROR and tests).
void corruptElement(void* buf, size_t i, DataType dtype);

// Reads / writes element i of a buffer of `dtype` as a double.
double loadElement(const void* buf, size_t i, DataType dtype);
void storeElement(void* buf, size_t i, DataType dtype, double v);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
