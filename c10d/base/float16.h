// Inline IEEE half / bfloat16 <-> float conversions (round to nearest even), for loops that
// convert every element (the reduction kernels). c10d/base/types.h exports the same conversions
// out of line; tests/core/types_test.cc checks both against a table-based reference.
#pragma once

#include <cstdint>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace detail {

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}

inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

// Exact: every half is a float. Subnormal halves are renormalised with one exact float
// subtraction (F. Giesen's half_to_float).
inline float halfToFloatInline(uint16_t h) {
  constexpr uint32_t kShiftedExp = 0x7c00u << 13;
  uint32_t o = static_cast<uint32_t>(h & 0x7fff) << 13;
  const uint32_t exp = kShiftedExp & o;
  o += (127u - 15u) << 23;
  if (exp == kShiftedExp) {
    o += (128u - 16u) << 23;  // inf / nan
  } else if (exp == 0) {
    o += 1u << 23;  // zero / subnormal
    o = floatBits(bitsFloat(o) - bitsFloat(113u << 23));
  }
  o |= static_cast<uint32_t>(h & 0x8000) << 16;
  return bitsFloat(o);
}

inline uint16_t floatToHalfInline(float f) {
  const uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) {  // inf or nan (nan stays a quiet nan)
    return sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0);
  }
  if (absx >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000) {                       // below the smallest normal half
    if (absx < 0x33000000) return sign;          // <= 2^-25 rounds to zero
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // value = m * 2^(e-150); the half unit is 2^-24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t r = absx - 0x38000000;  // rebias the exponent 127 -> 15
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;  // may carry into the exponent: correct
  return sign | static_cast<uint16_t>(r);
}

inline float bf16ToFloatInline(uint16_t b) {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

inline uint16_t floatToBf16Inline(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace detail
C10D_NAMESPACE_END
}  // namespace c10d
