// Reduce-op names and the reference CPU reduction kernels.
//
// Kernels are templates over (element type, op) with the dispatch done once per call, so the inner
// loops are plain element-wise loops the compiler vectorizes (f32/f64 sums in particular).
// Integer arithmetic goes through the unsigned type of the same width, so SUM and PRODUCT wrap
// modulo 2^bits instead of overflowing (no undefined behaviour). f16/bf16 are computed in float and
// rounded once to nearest-even: float has more than 2p+2 bits of precision for both formats, so the
// result is the correctly rounded one for +, * and /.
#include "c10d/core/reduce_op.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/float16.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

const char* toString(ReduceOp::Kind k) {
  switch (k) {
    case ReduceOp::SUM:
      return "sum";
    case ReduceOp::AVG:
      return "avg";
    case ReduceOp::PRODUCT:
      return "prod";
    case ReduceOp::MIN:
      return "min";
    case ReduceOp::MAX:
      return "max";
    case ReduceOp::BAND:
      return "band";
    case ReduceOp::BOR:
      return "bor";
    case ReduceOp::BXOR:
      return "bxor";
    case ReduceOp::PREMUL_SUM:
      return "premul_sum";
  }
  return "unknown";
}

std::string toString(const ReduceOp& op) {
  if (op.kind == ReduceOp::PREMUL_SUM) return detail::str("premul_sum(", op.scale, ")");
  return toString(op.kind);
}

ReduceOp::Kind parseReduceOp(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  struct Alias {
    const char* name;
    ReduceOp::Kind kind;
  };
  static const Alias kAliases[] = {
      {"sum", ReduceOp::SUM},
      {"avg", ReduceOp::AVG},
      {"prod", ReduceOp::PRODUCT},
      {"product", ReduceOp::PRODUCT},
      {"min", ReduceOp::MIN},
      {"max", ReduceOp::MAX},
      {"band", ReduceOp::BAND},
      {"bor", ReduceOp::BOR},
      {"bxor", ReduceOp::BXOR},
      {"premul_sum", ReduceOp::PREMUL_SUM},
      {"premulsum", ReduceOp::PREMUL_SUM},
      {"mulsum", ReduceOp::PREMUL_SUM},
  };
  for (const auto& a : kAliases) {
    if (n == a.name) return a.kind;
  }
  C10D_THROW(InvalidArgument, "unknown reduce op '", name,
             "' (expected one of sum, avg, prod, min, max, band, bor, bxor, premul_sum, mulsum)");
}

bool isDefined(ReduceOp::Kind op, DataType dtype) {
  switch (op) {
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      return isIntegral(dtype);
    case ReduceOp::SUM:
    case ReduceOp::AVG:
    case ReduceOp::PRODUCT:
    case ReduceOp::MIN:
    case ReduceOp::MAX:
    case ReduceOp::PREMUL_SUM:
      return true;
  }
  return false;
}

namespace {

// Tag types for the 16-bit float formats, stored as uint16_t.
struct Half {};
struct BFloat16 {};

template <typename Tag>
struct Storage {
  using type = Tag;
};
template <>
struct Storage<Half> {
  using type = uint16_t;
};
template <>
struct Storage<BFloat16> {
  using type = uint16_t;
};

// Element-wise binary functors. Integer ones work on the unsigned representation (wrapping).
template <typename T>
using Unsigned = std::make_unsigned_t<T>;

template <typename T>
T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(
        static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)));
  } else {
    return a + b;
  }
}

template <typename T>
T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // uint8 promotes to int (255 * 255 fits); wider types multiply as unsigned.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;
    return static_cast<T>(static_cast<Unsigned<T>>(static_cast<U>(static_cast<Unsigned<T>>(a)) *
                                                   static_cast<U>(static_cast<Unsigned<T>>(b))));
  } else {
    return a * b;
  }
}

// min/max propagate NaN, as torch.minimum/maximum do.
template <typename T>
T minOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}
template <typename T>
T maxOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}

template <typename T>
struct SumOp {
  static T apply(T a, T b) { return wrapAdd(a, b); }
};
template <typename T>
struct ProdOp {
  static T apply(T a, T b) { return wrapMul(a, b); }
};
template <typename T>
struct MinOp {
  static T apply(T a, T b) { return minOf(a, b); }
};
template <typename T>
struct MaxOp {
  static T apply(T a, T b) { return maxOf(a, b); }
};
template <typename T>
struct AndOp {
  static T apply(T a, T b) { return static_cast<T>(a & b); }
};
template <typename T>
struct OrOp {
  static T apply(T a, T b) { return static_cast<T>(a | b); }
};
template <typename T>
struct XorOp {
  static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};

template <typename T, template <typename> class Op>
void loop(void* dstv, const void* srcv, size_t n) {
  T* dst = static_cast<T*>(dstv);
  const T* src = static_cast<const T*>(srcv);
  for (size_t i = 0; i < n; ++i) dst[i] = Op<T>::apply(dst[i], src[i]);
}

template <typename Tag>
float load16(uint16_t v) {
  if constexpr (std::is_same_v<Tag, Half>) {
    return detail::halfToFloatInline(v);
  } else {
    return detail::bf16ToFloatInline(v);
  }
}
template <typename Tag>
uint16_t store16(float f) {
  if constexpr (std::is_same_v<Tag, Half>) {
    return detail::floatToHalfInline(f);
  } else {
    return detail::floatToBf16Inline(f);
  }
}

template <typename Tag, template <typename> class Op>
void loop16(void* dstv, const void* srcv, size_t n) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  const uint16_t* src = static_cast<const uint16_t*>(srcv);
  for (size_t i = 0; i < n; ++i) {
    dst[i] = store16<Tag>(Op<float>::apply(load16<Tag>(dst[i]), load16<Tag>(src[i])));
  }
}

// bool is read as bytes (any non-zero byte is true) and written as 0/1.
void loopBool(void* dstv, const void* srcv, size_t n, ReduceOp::Kind op) {
  uint8_t* dst = static_cast<uint8_t*>(dstv);
  const uint8_t* src = static_cast<const uint8_t*>(srcv);
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
    case ReduceOp::PREMUL_SUM:
    case ReduceOp::MAX:
    case ReduceOp::BOR:
      for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] != 0) | (src[i] != 0);
      return;
    case ReduceOp::PRODUCT:
    case ReduceOp::MIN:
    case ReduceOp::BAND:
      for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] != 0) & (src[i] != 0);
      return;
    case ReduceOp::BXOR:
      for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] != 0) ^ (src[i] != 0);
      return;
  }
}

template <typename T>
void reduceTyped(void* dst, const void* src, size_t n, ReduceOp::Kind op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
    case ReduceOp::PREMUL_SUM:
      return loop<T, SumOp>(dst, src, n);
    case ReduceOp::PRODUCT:
      return loop<T, ProdOp>(dst, src, n);
    case ReduceOp::MIN:
      return loop<T, MinOp>(dst, src, n);
    case ReduceOp::MAX:
      return loop<T, MaxOp>(dst, src, n);
    case ReduceOp::BAND:
      if constexpr (std::is_integral_v<T>) return loop<T, AndOp>(dst, src, n);
      break;
    case ReduceOp::BOR:
      if constexpr (std::is_integral_v<T>) return loop<T, OrOp>(dst, src, n);
      break;
    case ReduceOp::BXOR:
      if constexpr (std::is_integral_v<T>) return loop<T, XorOp>(dst, src, n);
      break;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define C10D_HAVE_VEC16_PATH 1
// f16 and bf16 kernels 8 elements at a time: the software conversions above do not vectorize
// (half's has branches; bf16's NaN test defeats the vectorizer), which leaves the scalar path
// for these types far slower than float's. Each lane does what the scalar loop does, in the same
// order, so the results are the scalar path's bits: f16 <-> float with F16C (nearest-even, as
// ours; a NaN keeps its payload where ours makes it canonical, and it ignores FTZ/DAZ), bf16 <->
// float with AVX2 integer ops (the same rounding and NaN rule as floatToBf16Inline), and min/max
// with minOf/maxOf's NaN rule (a NaN in the first operand wins, then one in the second). The
// caller checks the CPU has AVX2 and F16C.
enum class Vec16Op { kSum, kProduct, kMin, kMax };

template <typename Tag>
__attribute__((target("avx2,f16c"))) inline __m256 load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<Tag, Half>) {
    return _mm256_cvtph_ps(h);
  } else {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <typename Tag>
__attribute__((target("avx2,f16c"))) inline void store8(uint16_t* p, __m256 v) {
  __m128i out;
  if constexpr (std::is_same_v<Tag, Half>) {
    out = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(x, 16);
    const __m256i isNan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                             _mm256_set1_epi32(0x7f800000));
    const __m256i rounding =
        _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, rounding), 16);
    const __m256i r =
        _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), isNan);
    // Every lane holds 0..0xffff, so the unsigned-saturating pack is exact; it packs within
    // 128-bit halves, so take quadwords 0 and 2.
    out = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), out);
}

template <Vec16Op kOp>
__attribute__((target("avx2,f16c"))) inline __m256 apply8(__m256 a, __m256 b) {
  if constexpr (kOp == Vec16Op::kSum) {
    return _mm256_add_ps(a, b);
  } else if constexpr (kOp == Vec16Op::kProduct) {
    return _mm256_mul_ps(a, b);
  } else {
    // minOf: b < a ? b : a; maxOf: a < b ? b : a (false on NaN: a) ...
    const __m256 takeB =
        kOp == Vec16Op::kMin ? _mm256_cmp_ps(b, a, _CMP_LT_OQ) : _mm256_cmp_ps(a, b, _CMP_LT_OQ);
    const __m256 r = _mm256_blendv_ps(a, b, takeB);
    // ... then a NaN in b wins when a is not NaN.
    const __m256 nanA = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
    const __m256 nanB = _mm256_cmp_ps(b, b, _CMP_UNORD_Q);
    return _mm256_blendv_ps(r, b, _mm256_andnot_ps(nanA, nanB));
  }
}

template <typename Tag, Vec16Op kOp>
__attribute__((target("avx2,f16c"))) size_t vec16(uint16_t* dst, const uint16_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    store8<Tag>(dst + i, apply8<kOp>(load8<Tag>(dst + i), load8<Tag>(src + i)));
  }
  return i;
}

// dst[i] = dst[i] / d, 8 lanes at a time (avg's final division; IEEE division rounds exactly,
// so the result is the scalar loop's).
template <typename Tag>
__attribute__((target("avx2,f16c"))) size_t vecDivide16(uint16_t* dst, size_t n, float d) {
  const __m256 dv = _mm256_set1_ps(d);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store8<Tag>(dst + i, _mm256_div_ps(load8<Tag>(dst + i), dv));
  return i;
}

// dst[i] = float(double(src[i]) * factor) rounded to Tag, 8 lanes at a time (PREMUL_SUM's scaling):
// the product in double and its rounding to float are the scalar loop's (both round as MXCSR
// says, nearest-even by default), so are the bits. dst may be src.
template <typename Tag>
__attribute__((target("avx2,f16c"))) size_t vecScale16(uint16_t* dst, const uint16_t* src, size_t n,
                                                       double factor) {
  const __m256d f = _mm256_set1_pd(factor);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = load8<Tag>(src + i);
    const __m256d lo = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), f);
    const __m256d hi = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), f);
    store8<Tag>(dst + i, _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)));
  }
  return i;
}

bool cpuHasAvx2F16c() {
  // __builtin_cpu_supports also checks the OS saves YMM state; clang 14 knows no "f16c", so that
  // bit (CPUID.1:ECX[29]) is read directly.
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__builtin_cpu_supports("avx2") || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) {
      return false;
    }
    return (ecx & (1u << 29)) != 0;
  }();
  return has;
}
#endif

template <typename Tag, template <typename> class Op>
void loop16Fast(void* dstv, const void* srcv, size_t n) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  const uint16_t* src = static_cast<const uint16_t*>(srcv);
#ifdef C10D_HAVE_VEC16_PATH
  if (cpuHasAvx2F16c()) {
    constexpr Vec16Op kOp = std::is_same_v<Op<float>, SumOp<float>>    ? Vec16Op::kSum
                            : std::is_same_v<Op<float>, ProdOp<float>> ? Vec16Op::kProduct
                            : std::is_same_v<Op<float>, MinOp<float>>  ? Vec16Op::kMin
                                                                       : Vec16Op::kMax;
    const size_t done = vec16<Tag, kOp>(dst, src, n);
    return loop16<Tag, Op>(dst + done, src + done, n - done);
  }
#endif
  loop16<Tag, Op>(dst, src, n);
}

template <typename Tag>
void reduce16(void* dst, const void* src, size_t n, ReduceOp::Kind op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
    case ReduceOp::PREMUL_SUM:
      return loop16Fast<Tag, SumOp>(dst, src, n);
    case ReduceOp::PRODUCT:
      return loop16Fast<Tag, ProdOp>(dst, src, n);
    case ReduceOp::MIN:
      return loop16Fast<Tag, MinOp>(dst, src, n);
    case ReduceOp::MAX:
      return loop16Fast<Tag, MaxOp>(dst, src, n);
    default:
      break;
  }
}

// Converts a double to integer type T: toward zero, saturating at T's range, NaN -> 0. (A plain
// cast of an out-of-range double is undefined behaviour.)
template <typename T>
T saturatingCast(double v) {
  if (v != v) return 0;
  v = std::trunc(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  // 2^bits(-1) exactly; max() itself may round up when converted to double.
  constexpr double hiExclusive = static_cast<double>(std::numeric_limits<T>::max() / 2 + 1) * 2.0;
  if (v < lo) return std::numeric_limits<T>::min();
  if (v >= hiExclusive) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void checkDtype(DataType dtype) {
  C10D_CHECK_ARG(static_cast<int>(dtype) < kNumDataTypes, "invalid DataType ",
                 static_cast<int>(dtype));
}

}  // namespace

void reduceInto(void* dst, const void* src, size_t n, DataType dtype, ReduceOp::Kind op) {
  checkDtype(dtype);
  C10D_CHECK_ARG(static_cast<int>(op) < ReduceOp::kNumKinds, "invalid reduce op ",
                 static_cast<int>(op));
  C10D_CHECK_ARG(isDefined(op, dtype), "reduce op ", toString(op), " is not defined on ",
                 toString(dtype), " tensors");
  if (n == 0) return;
  C10D_CHECK_ARG(dst != nullptr && src != nullptr, "reduceInto: null buffer for ", n, " elements");
  switch (dtype) {
    case DataType::kFloat32:
      return reduceTyped<float>(dst, src, n, op);
    case DataType::kFloat64:
      return reduceTyped<double>(dst, src, n, op);
    case DataType::kFloat16:
      return reduce16<Half>(dst, src, n, op);
    case DataType::kBFloat16:
      return reduce16<BFloat16>(dst, src, n, op);
    case DataType::kInt8:
      return reduceTyped<int8_t>(dst, src, n, op);
    case DataType::kUInt8:
      return reduceTyped<uint8_t>(dst, src, n, op);
    case DataType::kInt32:
      return reduceTyped<int32_t>(dst, src, n, op);
    case DataType::kInt64:
      return reduceTyped<int64_t>(dst, src, n, op);
    case DataType::kBool:
      return loopBool(dst, src, n, op);
  }
}

namespace {

template <typename T>
void scaleTyped(void* dstv, const void* srcv, size_t n, double factor) {
  T* dst = static_cast<T*>(dstv);
  const T* src = static_cast<const T*>(srcv);
  if constexpr (std::is_same_v<T, float>) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = static_cast<float>(static_cast<double>(src[i]) * factor);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
  } else {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = saturatingCast<T>(static_cast<double>(src[i]) * factor);
    }
  }
}

template <typename Tag>
void scale16(void* dstv, const void* srcv, size_t n, double factor) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  const uint16_t* src = static_cast<const uint16_t*>(srcv);
  size_t i = 0;
#ifdef C10D_HAVE_VEC16_PATH
  if (cpuHasAvx2F16c()) i = vecScale16<Tag>(dst, src, n, factor);
#endif
  for (; i < n; ++i) {
    dst[i] = store16<Tag>(static_cast<float>(static_cast<double>(load16<Tag>(src[i])) * factor));
  }
}

template <typename T>
void divideTyped(void* dstv, size_t n, int64_t divisor) {
  T* dst = static_cast<T*>(dstv);
  if constexpr (std::is_floating_point_v<T>) {
    const T d = static_cast<T>(divisor);
    for (size_t i = 0; i < n; ++i) dst[i] = dst[i] / d;
  } else {
    // Divide in int64 (every T fits); the only overflow, INT64_MIN / -1, wraps like negation.
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = static_cast<int64_t>(dst[i]);
      int64_t q;
      if (divisor == -1) {
        q = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
      } else {
        q = v / divisor;
      }
      dst[i] = static_cast<T>(static_cast<Unsigned<T>>(static_cast<uint64_t>(q)));
    }
  }
}

template <typename Tag>
void divide16(void* dstv, size_t n, int64_t divisor) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  const float d = static_cast<float>(divisor);
  size_t i = 0;
#ifdef C10D_HAVE_VEC16_PATH
  if (cpuHasAvx2F16c()) i = vecDivide16<Tag>(dst, n, d);
#endif
  for (; i < n; ++i) dst[i] = store16<Tag>(load16<Tag>(dst[i]) / d);
}

// x / d rounded to f32 toward zero, its last bit set when inexact ("round to odd"): rounding
// that to a format of at most 22 significant bits gives what rounding x / d once would. The
// remainder x - q * d of the nearest quotient q is exact in f32 (FMA), and its sign says on which
// side of x / d q lies.
inline float quotientToOdd(float x, float d) {
  const float q = x / d;
  const float r = std::fma(-q, d, x);
  if (r == 0 || std::isnan(r)) return q;  // exact, or x is Inf / NaN
  uint32_t u;
  std::memcpy(&u, &q, sizeof(u));
  if ((r < 0) != std::signbit(q)) u -= 1;  // |q| > |x / d|: one step toward zero
  u |= 1;
  float out;
  std::memcpy(&out, &u, sizeof(u));
  return out;
}

#ifdef C10D_HAVE_VEC16_PATH
template <typename Tag>
__attribute__((target("avx2,f16c"))) size_t vecWiden16(float* dst, const uint16_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8<Tag>(src + i));
  return i;
}

template <typename Tag>
__attribute__((target("avx2,f16c"))) size_t vecNarrow16(uint16_t* dst, const float* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store8<Tag>(dst + i, _mm256_loadu_ps(src + i));
  return i;
}

// quotientToOdd, 8 lanes at a time, then rounded to Tag: the scalar tail's bits.
template <typename Tag>
__attribute__((target("avx2,f16c,fma"))) size_t vecNarrowDivided16(uint16_t* dst, const float* src,
                                                                   size_t n, float d) {
  const __m256 dv = _mm256_set1_ps(d);
  const __m256i one = _mm256_set1_epi32(1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    const __m256 q = _mm256_div_ps(x, dv);
    const __m256 r = _mm256_fnmadd_ps(q, dv, x);
    const __m256i inexact = _mm256_castps_si256(_mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_NEQ_OQ));
    const __m256i over =
        _mm256_and_si256(inexact, _mm256_srai_epi32(_mm256_castps_si256(_mm256_xor_ps(r, q)), 31));
    __m256i u = _mm256_sub_epi32(_mm256_castps_si256(q), _mm256_and_si256(over, one));
    u = _mm256_or_si256(u, _mm256_and_si256(inexact, one));
    store8<Tag>(dst + i, _mm256_castsi256_ps(u));
  }
  return i;
}

bool cpuHasFma() {
  static const bool has = cpuHasAvx2F16c() && __builtin_cpu_supports("fma");
  return has;
}
#endif

template <typename Tag>
void widen16(float* dst, const void* srcv, size_t n) {
  const uint16_t* src = static_cast<const uint16_t*>(srcv);
  size_t i = 0;
#ifdef C10D_HAVE_VEC16_PATH
  if (cpuHasAvx2F16c()) i = vecWiden16<Tag>(dst, src, n);
#endif
  for (; i < n; ++i) dst[i] = load16<Tag>(src[i]);
}

template <typename Tag>
void narrow16(void* dstv, const float* src, size_t n, int64_t divisor) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  size_t i = 0;
  if (divisor == 1) {
#ifdef C10D_HAVE_VEC16_PATH
    if (cpuHasAvx2F16c()) i = vecNarrow16<Tag>(dst, src, n);
#endif
    for (; i < n; ++i) dst[i] = store16<Tag>(src[i]);
    return;
  }
  const float d = static_cast<float>(divisor);
#ifdef C10D_HAVE_VEC16_PATH
  if (cpuHasFma()) i = vecNarrowDivided16<Tag>(dst, src, n, d);
#endif
  for (; i < n; ++i) dst[i] = store16<Tag>(quotientToOdd(src[i], d));
}

}  // namespace

void scale(void* dst, const void* src, size_t n, DataType dtype, double factor) {
  checkDtype(dtype);
  if (n == 0) return;
  C10D_CHECK_ARG(dst != nullptr && src != nullptr, "scale: null buffer for ", n, " elements");
  switch (dtype) {
    case DataType::kFloat32:
      return scaleTyped<float>(dst, src, n, factor);
    case DataType::kFloat64:
      return scaleTyped<double>(dst, src, n, factor);
    case DataType::kFloat16:
      return scale16<Half>(dst, src, n, factor);
    case DataType::kBFloat16:
      return scale16<BFloat16>(dst, src, n, factor);
    case DataType::kInt8:
      return scaleTyped<int8_t>(dst, src, n, factor);
    case DataType::kUInt8:
      return scaleTyped<uint8_t>(dst, src, n, factor);
    case DataType::kInt32:
      return scaleTyped<int32_t>(dst, src, n, factor);
    case DataType::kInt64:
      return scaleTyped<int64_t>(dst, src, n, factor);
    case DataType::kBool: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      const uint8_t* s = static_cast<const uint8_t*>(src);
      const bool keep = factor != 0.0;  // NaN counts as true, as a cast to bool does
      for (size_t i = 0; i < n; ++i) d[i] = (s[i] != 0) && keep;
      return;
    }
  }
}

void widenHalf(float* dst, const void* src, size_t n, DataType dtype) {
  C10D_CHECK_ARG(dtype == DataType::kFloat16 || dtype == DataType::kBFloat16,
                 "widenHalf: not a half type: ", toString(dtype));
  if (dtype == DataType::kFloat16) {
    widen16<Half>(dst, src, n);
  } else {
    widen16<BFloat16>(dst, src, n);
  }
}

void narrowHalf(void* dst, const float* src, size_t n, DataType dtype, int64_t divisor) {
  C10D_CHECK_ARG(dtype == DataType::kFloat16 || dtype == DataType::kBFloat16,
                 "narrowHalf: not a half type: ", toString(dtype));
  C10D_CHECK_ARG(divisor >= 1 && divisor <= (1 << 24), "narrowHalf: divisor ", divisor,
                 " outside [1, 2^24]");
  if (dtype == DataType::kFloat16) {
    narrow16<Half>(dst, src, n, divisor);
  } else {
    narrow16<BFloat16>(dst, src, n, divisor);
  }
}

void divide(void* dst, size_t n, DataType dtype, int64_t divisor) {
  checkDtype(dtype);
  C10D_CHECK_ARG(divisor != 0, "divide: divisor is 0 (", n, " elements of ", toString(dtype), ")");
  if (n == 0) return;
  C10D_CHECK_ARG(dst != nullptr, "divide: null buffer for ", n, " elements");
  switch (dtype) {
    case DataType::kFloat32:
      return divideTyped<float>(dst, n, divisor);
    case DataType::kFloat64:
      return divideTyped<double>(dst, n, divisor);
    case DataType::kFloat16:
      return divide16<Half>(dst, n, divisor);
    case DataType::kBFloat16:
      return divide16<BFloat16>(dst, n, divisor);
    case DataType::kInt8:
      return divideTyped<int8_t>(dst, n, divisor);
    case DataType::kUInt8:
      return divideTyped<uint8_t>(dst, n, divisor);
    case DataType::kInt32:
      return divideTyped<int32_t>(dst, n, divisor);
    case DataType::kInt64:
      return divideTyped<int64_t>(dst, n, divisor);
    case DataType::kBool: {
      // Integer division toward zero: only a divisor of +-1 keeps a true value true.
      uint8_t* d = static_cast<uint8_t*>(dst);
      const bool keep = divisor == 1 || divisor == -1;
      for (size_t i = 0; i < n; ++i) d[i] = (d[i] != 0) && keep;
      return;
    }
  }
}

C10D_NAMESPACE_END
}  // namespace c10d
