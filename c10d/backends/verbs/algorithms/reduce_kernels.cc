#include "c10d/backends/verbs/algorithms/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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

// Elements per pass of the f32 kernels: three stack buffers of this many floats stay in L1.
constexpr size_t kWideBlock = 512;

void load(float* dst, const void* src, bool wide, size_t n, DataType half) {
  if (wide) {
    std::memcpy(dst, src, n * sizeof(float));
  } else {
    widenHalf(dst, src, n, half);
  }
}

void store(void* dst, const float* src, size_t n, DataType half, int divisor) {
  narrowHalf(dst, src, n, half, divisor);
}

}  // namespace

void addWide(void* out, bool outWide, const void* a, bool aWide, const void* b, bool bWide,
             size_t n, DataType half, int divisor) {
  float fa[kWideBlock], fb[kWideBlock];
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* po = static_cast<uint8_t*>(out);
  const size_t ea = aWide ? 4 : 2, eb = bWide ? 4 : 2, eo = outWide ? 4 : 2;
  for (size_t i = 0; i < n; i += kWideBlock) {
    const size_t k = std::min(kWideBlock, n - i);
    load(fa, pa + i * ea, aWide, k, half);
    load(fb, pb + i * eb, bWide, k, half);
    for (size_t j = 0; j < k; ++j) fa[j] += fb[j];
    if (outWide) {
      std::memcpy(po + i * eo, fa, k * sizeof(float));
    } else {
      store(po + i * eo, fa, k, half, divisor);
    }
  }
}

void sumSourcesWide(void* dst, const void* const* srcs, int k, size_t n, DataType half,
                    int divisor) {
  float acc[kWideBlock], x[kWideBlock];
  for (size_t i = 0; i < n; i += kWideBlock) {
    const size_t m = std::min(kWideBlock, n - i);
    load(acc, static_cast<const uint16_t*>(srcs[0]) + i, false, m, half);
    for (int q = 1; q < k; ++q) {
      load(x, static_cast<const uint16_t*>(srcs[q]) + i, false, m, half);
      for (size_t j = 0; j < m; ++j) acc[j] += x[j];
    }
    store(static_cast<uint16_t*>(dst) + i, acc, m, half, divisor);
  }
}

void widen(float* dst, const void* src, size_t n, DataType half) {
  load(dst, src, false, n, half);
}

void narrow(void* dst, const float* src, size_t n, DataType half, int divisor) {
  store(dst, src, n, half, divisor);
}

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
C10D_NAMESPACE_END
}  // namespace c10d
