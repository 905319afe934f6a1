// Reference f16/bf16 arithmetic for the tests, written independently of c10d/base/types.cc: values
// are computed with ldexp from the bit fields, and rounding searches a table of every non-negative
// value for the nearest one (ties to the even bit pattern). Slow and obviously right.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// The real value of half bit pattern `h` (finite patterns only; 0x7c00 gives 65536, "inf").
inline double halfValue(uint32_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int e = static_cast<int>((h >> 10) & 0x1f);
  const int m = static_cast<int>(h & 0x3ff);
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

inline double bf16Value(uint32_t b) {
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  const int e = static_cast<int>((b >> 7) & 0xff);
  const int m = static_cast<int>(b & 0x7f);
  if (e == 0) return sign * std::ldexp(m, -133);
  return sign * std::ldexp(128 + m, e - 134);
}

// Rounds |x| to the nearest entry of `table` (index = bit pattern; the last entry stands for
// infinity), ties to an even index.
inline uint16_t roundInTable(const std::vector<double>& table, double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  if (ax >= table.back()) return sign | static_cast<uint16_t>(table.size() - 1);
  const size_t hi =
      static_cast<size_t>(std::lower_bound(table.begin(), table.end(), ax) - table.begin());
  if (table[hi] == ax) return sign | static_cast<uint16_t>(hi);
  const size_t lo = hi - 1;
  const double dlo = ax - table[lo];
  const double dhi = table[hi] - ax;
  size_t pick = dlo < dhi ? lo : (dhi < dlo ? hi : ((lo % 2 == 0) ? lo : hi));
  return sign | static_cast<uint16_t>(pick);
}

inline const std::vector<double>& halfTable() {
  static const std::vector<double> t = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h <= 0x7c00; ++h) v.push_back(halfValue(h));
    return v;
  }();
  return t;
}

inline const std::vector<double>& bf16Table() {
  static const std::vector<double> t = [] {
    std::vector<double> v;
    for (uint32_t b = 0; b <= 0x7f80; ++b) v.push_back(bf16Value(b));
    return v;
  }();
  return t;
}

// Correctly rounded (nearest, ties to even) conversions of a double; infinities saturate.
inline uint16_t refRoundToHalf(double x) {
  if (std::isinf(x)) return (x < 0 ? 0x8000 : 0) | 0x7c00;
  return roundInTable(halfTable(), x);
}
inline uint16_t refRoundToBf16(double x) {
  if (std::isinf(x)) return (x < 0 ? 0x8000 : 0) | 0x7f80;
  return roundInTable(bf16Table(), x);
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
