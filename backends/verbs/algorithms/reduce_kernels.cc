#include "backends/verbs/algorithms/reduce_kernels.h"

#include <cstring>

namespace c10d {
namespace verbs {

namespace {

template <typename T>
void sumTo(T* __restrict dst, const T* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Sums up to 4 sources per pass; the result is identical to adding them one by one in order.
template <typename T>
void sumSources(T* dst, const void* const* srcs, int k, size_t n) {
  const T* s0 = static_cast<const T*>(srcs[0]);
  int i = 1;
  if (k >= 4) {
    const T* __restrict a = s0;
    const T* __restrict b = static_cast<const T*>(srcs[1]);
    const T* __restrict c = static_cast<const T*>(srcs[2]);
    const T* __restrict d = static_cast<const T*>(srcs[3]);
    T* __restrict o = dst;
    if (dst == s0) {
      for (size_t j = 0; j < n; ++j) o[j] = ((o[j] + b[j]) + c[j]) + d[j];
    } else {
      for (size_t j = 0; j < n; ++j) o[j] = ((a[j] + b[j]) + c[j]) + d[j];
    }
    i = 4;
  } else if (k >= 2) {
    const T* __restrict b = static_cast<const T*>(srcs[1]);
    T* __restrict o = dst;
    if (dst == s0) {
      for (size_t j = 0; j < n; ++j) o[j] += b[j];
    } else {
      const T* __restrict a = s0;
      for (size_t j = 0; j < n; ++j) o[j] = a[j] + b[j];
    }
    i = 2;
    if (k >= 3) {
      sumTo(dst, static_cast<const T*>(srcs[2]), n);
      i = 3;
    }
  } else if (dst != s0) {
    std::memcpy(dst, s0, n * sizeof(T));
  }
  for (; i + 1 < k; i += 2) {
    T* __restrict o = dst;
    const T* __restrict b = static_cast<const T*>(srcs[i]);
    const T* __restrict c = static_cast<const T*>(srcs[i + 1]);
    for (size_t j = 0; j < n; ++j) o[j] = (o[j] + b[j]) + c[j];
  }
  if (i < k) sumTo(dst, static_cast<const T*>(srcs[i]), n);
}

}  // namespace

void reduceTo(void* dst, const void* src, size_t n, DataType dtype, ReduceOp::Kind op) {
  if (n == 0) return;
  if (op == ReduceOp::SUM && dtype == DataType::kFloat32) {
    sumTo(static_cast<float*>(dst), static_cast<const float*>(src), n);
  } else if (op == ReduceOp::SUM && dtype == DataType::kFloat64) {
    sumTo(static_cast<double*>(dst), static_cast<const double*>(src), n);
  } else {
    reduceInto(dst, src, n, dtype, op);
  }
}

void reduceSources(void* dst, const void* const* srcs, int k, size_t n, DataType dtype,
                   ReduceOp::Kind op) {
  if (n == 0 || k == 0) return;
  if (op == ReduceOp::SUM && dtype == DataType::kFloat32) {
    sumSources(static_cast<float*>(dst), srcs, k, n);
    return;
  }
  if (op == ReduceOp::SUM && dtype == DataType::kFloat64) {
    sumSources(static_cast<double*>(dst), srcs, k, n);
    return;
  }
  if (dst != srcs[0]) std::memcpy(dst, srcs[0], n * elementSize(dtype));
  for (int i = 1; i < k; ++i) reduceInto(dst, srcs[i], n, dtype, op);
}

}  // namespace verbs
}  // namespace c10d
