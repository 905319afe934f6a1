// Tests for c10d/core/reduce_op.h: names, isDefined, and the reference kernels (reduceInto, scale,
// divide) against straightforward per-element references for every dtype x op.
#include "c10d/core/reduce_op.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "tests/core/float16_reference.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

const DataType kAllTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                              DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                              DataType::kInt32,    DataType::kInt64,   DataType::kBool};
const ReduceOp::Kind kAllOps[] = {ReduceOp::SUM, ReduceOp::AVG,  ReduceOp::PRODUCT,
                                  ReduceOp::MIN, ReduceOp::MAX,  ReduceOp::BAND,
                                  ReduceOp::BOR, ReduceOp::BXOR, ReduceOp::PREMUL_SUM};

TEST(ReduceOpNames, RoundTrip) {
  for (auto op : kAllOps) EXPECT_EQ(parseReduceOp(toString(op)), op) << toString(op);
  EXPECT_EQ(parseReduceOp("product"), ReduceOp::PRODUCT);
  EXPECT_EQ(parseReduceOp("mulsum"), ReduceOp::PREMUL_SUM);
  EXPECT_EQ(parseReduceOp("SUM"), ReduceOp::SUM);
  EXPECT_STREQ(toString(ReduceOp::PRODUCT), "prod");
  EXPECT_EQ(toString(ReduceOp::premulSum(0.5)), "premul_sum(0.5)");
  EXPECT_EQ(toString(ReduceOp(ReduceOp::MAX)), "max");
  try {
    parseReduceOp("median");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("median"), std::string::npos);
  }
}

TEST(ReduceOpNames, IsDefined) {
  for (auto t : kAllTypes) {
    for (auto op : kAllOps) {
      const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
      EXPECT_EQ(isDefined(op, t), !bitwise || isIntegral(t)) << toString(op) << " " << toString(t);
    }
  }
}

// ---- per-element references, in wide types ----

// Raw element i of a buffer of dtype t, as double (floats) or as int64 bits (ints).
double loadF(const std::vector<uint8_t>& b, size_t i, DataType t) {
  switch (t) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, b.data() + 4 * i, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, b.data() + 8 * i, 8);
      return v;
    }
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, b.data() + 2 * i, 2);
      return t == DataType::kFloat16 ? test::halfValue(v) : test::bf16Value(v);
    }
    default:
      return 0;
  }
}

int64_t loadI(const std::vector<uint8_t>& b, size_t i, DataType t) {
  switch (t) {
    case DataType::kInt8:
      return static_cast<int8_t>(b[i]);
    case DataType::kUInt8:
      return b[i];
    case DataType::kBool:
      return b[i] != 0;
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, b.data() + 4 * i, 4);
      return v;
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, b.data() + 8 * i, 8);
      return v;
    }
    default:
      return 0;
  }
}

// The expected bytes of element i after dst (op) src.
std::vector<uint8_t> expectedElement(const std::vector<uint8_t>& dst,
                                     const std::vector<uint8_t>& src, size_t i, DataType t,
                                     ReduceOp::Kind op) {
  const size_t es = elementSize(t);
  std::vector<uint8_t> out(es);
  if (isFloatingPoint(t)) {
    const double a = loadF(dst, i, t);
    const double b = loadF(src, i, t);
    double r = 0;
    switch (op) {
      case ReduceOp::PRODUCT:
        r = a * b;
        break;
      case ReduceOp::MIN:
        r = std::min(a, b);
        break;
      case ReduceOp::MAX:
        r = std::max(a, b);
        break;
      default:
        r = a + b;
        break;  // SUM, AVG, PREMUL_SUM
    }
    if (t == DataType::kFloat32) {
      const float f = static_cast<float>(r);
      std::memcpy(out.data(), &f, 4);
    } else if (t == DataType::kFloat64) {
      std::memcpy(out.data(), &r, 8);
    } else {
      const uint16_t h =
          t == DataType::kFloat16 ? test::refRoundToHalf(r) : test::refRoundToBf16(r);
      std::memcpy(out.data(), &h, 2);
    }
    return out;
  }
  const int64_t a = loadI(dst, i, t);
  const int64_t b = loadI(src, i, t);
  uint64_t r = 0;
  if (t == DataType::kBool) {
    switch (op) {
      case ReduceOp::PRODUCT:
      case ReduceOp::MIN:
      case ReduceOp::BAND:
        r = a && b;
        break;
      case ReduceOp::BXOR:
        r = a != b;
        break;
      default:
        r = a || b;
        break;
    }
  } else {
    const uint64_t ua = static_cast<uint64_t>(a);
    const uint64_t ub = static_cast<uint64_t>(b);
    switch (op) {
      case ReduceOp::PRODUCT:
        r = ua * ub;
        break;
      case ReduceOp::MIN:
        r = static_cast<uint64_t>(std::min(a, b));
        break;
      case ReduceOp::MAX:
        r = static_cast<uint64_t>(std::max(a, b));
        break;
      case ReduceOp::BAND:
        r = ua & ub;
        break;
      case ReduceOp::BOR:
        r = ua | ub;
        break;
      case ReduceOp::BXOR:
        r = ua ^ ub;
        break;
      default:
        r = ua + ub;
        break;
    }
  }
  std::memcpy(out.data(), &r, es);  // little-endian: the low bytes are the wrapped result
  return out;
}

// Random bytes that form finite values of t (any bit pattern for ints, 0/1/other bytes for bool).
std::vector<uint8_t> randomBuffer(size_t n, DataType t, std::mt19937* rng) {
  const size_t es = elementSize(t);
  std::vector<uint8_t> b(n * es);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<double> real(-100, 100);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = b.data() + i * es;
    if (t == DataType::kFloat32) {
      const float f = static_cast<float>(real(*rng) * std::ldexp(1.0, byte(*rng) % 40 - 20));
      std::memcpy(p, &f, 4);
    } else if (t == DataType::kFloat64) {
      const double d = real(*rng) * std::ldexp(1.0, byte(*rng) % 80 - 40);
      std::memcpy(p, &d, 8);
    } else if (t == DataType::kFloat16 || t == DataType::kBFloat16) {
      uint16_t h;
      do {  // any finite bit pattern: subnormals, the largest values (sums overflow to inf)
        h = static_cast<uint16_t>(byte(*rng) | (byte(*rng) << 8));
      } while (t == DataType::kFloat16 ? ((h & 0x7c00) == 0x7c00) : ((h & 0x7f80) == 0x7f80));
      std::memcpy(p, &h, 2);
    } else if (t == DataType::kBool) {
      const int v = byte(*rng);
      p[0] = static_cast<uint8_t>(v < 100 ? 0 : (v < 230 ? 1 : v));  // some non-canonical trues
    } else {
      for (size_t k = 0; k < es; ++k) p[k] = static_cast<uint8_t>(byte(*rng));
    }
  }
  return b;
}

bool sameValue(const uint8_t* got, const uint8_t* want, DataType t) {
  if (t == DataType::kBool) return got[0] == want[0];  // want is canonical 0/1
  if (t == DataType::kFloat32) {
    float a, b;
    std::memcpy(&a, got, 4);
    std::memcpy(&b, want, 4);
    return a == b;  // -0 == +0
  }
  if (t == DataType::kFloat64) {
    double a, b;
    std::memcpy(&a, got, 8);
    std::memcpy(&b, want, 8);
    return a == b;
  }
  if (t == DataType::kFloat16 || t == DataType::kBFloat16) {
    uint16_t a, b;
    std::memcpy(&a, got, 2);
    std::memcpy(&b, want, 2);
    return a == b || ((a | b) & 0x7fff) == 0;
  }
  return std::memcmp(got, want, elementSize(t)) == 0;
}

TEST(ReduceInto, EveryDtypeAndOpMatchesReference) {
  std::mt19937 rng(1234);
  const size_t n = 1037;  // odd: exercises vector loop tails
  for (auto t : kAllTypes) {
    for (auto op : kAllOps) {
      if (!isDefined(op, t)) {
        std::vector<uint8_t> d(elementSize(t)), s(elementSize(t));
        EXPECT_THROW(reduceInto(d.data(), s.data(), 1, t, op), InvalidArgument);
        continue;
      }
      std::vector<uint8_t> dst = randomBuffer(n, t, &rng);
      const std::vector<uint8_t> src = randomBuffer(n, t, &rng);
      const std::vector<uint8_t> before = dst;
      reduceInto(dst.data(), src.data(), n, t, op);
      const size_t es = elementSize(t);
      for (size_t i = 0; i < n; ++i) {
        const auto want = expectedElement(before, src, i, t, op);
        ASSERT_TRUE(sameValue(dst.data() + i * es, want.data(), t))
            << toString(t) << " " << toString(op) << " element " << i;
      }
    }
  }
}

TEST(ReduceInto, IntegerWrapAndExtremes) {
  std::vector<int32_t> a = {std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int32_t>::min(), 65536, -7};
  std::vector<int32_t> b = {1, -1, 65536, 3};
  auto s = a;
  reduceInto(s.data(), b.data(), 4, DataType::kInt32, ReduceOp::SUM);
  EXPECT_EQ(s, (std::vector<int32_t>{std::numeric_limits<int32_t>::min(),
                                     std::numeric_limits<int32_t>::max(), 131072, -4}));
  auto p = a;
  reduceInto(p.data(), b.data(), 4, DataType::kInt32, ReduceOp::PRODUCT);
  EXPECT_EQ(p[2], 0);  // 2^32 wraps to 0
  EXPECT_EQ(p[3], -21);
  std::vector<int64_t> x = {std::numeric_limits<int64_t>::min()}, y = {-1};
  reduceInto(x.data(), y.data(), 1, DataType::kInt64, ReduceOp::PRODUCT);
  EXPECT_EQ(x[0], std::numeric_limits<int64_t>::min());
  std::vector<uint8_t> u = {200}, v = {100};
  reduceInto(u.data(), v.data(), 1, DataType::kUInt8, ReduceOp::SUM);
  EXPECT_EQ(u[0], 44);
}

TEST(ReduceInto, FloatMinMaxPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, 1.0f, 2.0f};
  std::vector<float> b = {1.0f, nan, 3.0f};
  auto mn = a;
  reduceInto(mn.data(), b.data(), 3, DataType::kFloat32, ReduceOp::MIN);
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 2.0f);
  auto mx = a;
  reduceInto(mx.data(), b.data(), 3, DataType::kFloat32, ReduceOp::MAX);
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3.0f);
}

// f16 / bf16 through every vectorized op on the values the random test leaves out: every pair of
// +-0, +-1, +-inf, NaN, the largest finite value (sums and products overflow) and the smallest
// subnormal (products underflow), 17 x 17 pairs so the 8-wide loop and its tail both see them.
// The result is the float op rounded once; a NaN result must be NaN (payloads may differ), min/max
// keep the NaN of the first operand, else of the second, and -0/+0 are told apart.
TEST(ReduceInto, HalfAndBf16SpecialValuesAndNaN) {
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool half = t == DataType::kFloat16;
    auto toF = [&](uint16_t v) { return half ? halfToFloat(v) : bf16ToFloat(v); };
    auto fromF = [&](float f) { return half ? floatToHalf(f) : floatToBf16(f); };
    const std::vector<uint16_t> specials =
        half ? std::vector<uint16_t>{0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00,
                                     0x7e00, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x3800,
                                     0xc000, 0x7e01, 0xfe00, 0x4900, 0x0400}
             : std::vector<uint16_t>{0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80,
                                     0x7fc0, 0x7f7f, 0xff7f, 0x0001, 0x8001, 0x3f00,
                                     0xc000, 0x7fc1, 0xffc0, 0x4120, 0x0080};
    std::vector<uint16_t> a, b;
    for (uint16_t x : specials) {
      for (uint16_t y : specials) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    for (ReduceOp::Kind op : {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
      std::vector<uint16_t> got = a;
      reduceInto(got.data(), b.data(), got.size(), t, op);
      for (size_t i = 0; i < a.size(); ++i) {
        const float x = toF(a[i]), y = toF(b[i]);
        float want;
        switch (op) {
          case ReduceOp::SUM:
            want = x + y;
            break;
          case ReduceOp::PRODUCT:
            want = x * y;
            break;
          case ReduceOp::MIN:
            want = std::isnan(x) ? x : std::isnan(y) ? y : (y < x ? y : x);
            break;
          default:
            want = std::isnan(x) ? x : std::isnan(y) ? y : (x < y ? y : x);
            break;
        }
        const auto where = [&] {
          char buf[96];
          std::snprintf(buf, sizeof(buf), "%s %s of 0x%04x and 0x%04x (element %zu): got 0x%04x",
                        toString(t), toString(op), a[i], b[i], i, got[i]);
          return std::string(buf);
        };
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(toF(got[i]))) << where() << ", want NaN";
          if (op == ReduceOp::MIN || op == ReduceOp::MAX) {
            // Which NaN: the operand's sign survives.
            EXPECT_EQ(got[i] & 0x8000, (std::isnan(x) ? a[i] : b[i]) & 0x8000) << where();
          }
        } else {
          EXPECT_EQ(got[i], fromF(want)) << where();
        }
      }
    }
  }
}

TEST(ReduceInto, ZeroCountAndErrors) {
  EXPECT_NO_THROW(reduceInto(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::SUM));
  float f = 1;
  EXPECT_THROW(reduceInto(nullptr, &f, 1, DataType::kFloat32, ReduceOp::SUM), InvalidArgument);
  EXPECT_THROW(reduceInto(&f, &f, 1, DataType::kFloat32, ReduceOp::BXOR), InvalidArgument);
  EXPECT_THROW(reduceInto(&f, &f, 1, static_cast<DataType>(99), ReduceOp::SUM), InvalidArgument);
}

TEST(ReduceInto, InPlaceAliasing) {
  std::vector<float> a(1001);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  reduceInto(a.data(), a.data(), a.size(), DataType::kFloat32, ReduceOp::SUM);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], 2.0f * i);
}

TEST(Scale, FloatsIntsAndBool) {
  std::vector<float> f = {1.0f, -3.0f, 0.1f};
  std::vector<float> fo(3);
  scale(fo.data(), f.data(), 3, DataType::kFloat32, 0.5);
  EXPECT_EQ(fo, (std::vector<float>{0.5f, -1.5f, static_cast<float>(0.1f * 0.5)}));
  std::vector<double> d = {3.0}, dout(1);
  scale(dout.data(), d.data(), 1, DataType::kFloat64, 1.0 / 3);
  EXPECT_EQ(dout[0], 3.0 * (1.0 / 3));
  // Integers: toward zero, saturating.
  std::vector<int8_t> i8 = {7, -7, 100, -100};
  std::vector<int8_t> i8o(4);
  scale(i8o.data(), i8.data(), 4, DataType::kInt8, 1.5);
  EXPECT_EQ(i8o, (std::vector<int8_t>{10, -10, 127, -128}));
  std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::max()}, i64o(1);
  scale(i64o.data(), i64.data(), 1, DataType::kInt64, 4.0);
  EXPECT_EQ(i64o[0], std::numeric_limits<int64_t>::max());
  std::vector<uint8_t> u = {10}, uo(1);
  scale(uo.data(), u.data(), 1, DataType::kUInt8, -1.0);
  EXPECT_EQ(uo[0], 0);
  std::vector<uint8_t> bl = {0, 1, 5}, blo(3);
  scale(blo.data(), bl.data(), 3, DataType::kBool, 2.0);
  EXPECT_EQ(blo, (std::vector<uint8_t>{0, 1, 1}));
  scale(blo.data(), bl.data(), 3, DataType::kBool, 0.0);
  EXPECT_EQ(blo, (std::vector<uint8_t>{0, 0, 0}));
}

TEST(Scale, HalfAndBf16RoundCorrectly) {
  std::mt19937 rng(5);
  for (auto t : {DataType::kFloat16, DataType::kBFloat16}) {
    // 2000 elements: the 8-lane path and its tail; factors that round, overflow and underflow.
    for (const double factor : {0.3, 1e6, 1e-9, -3.7}) {
      const auto in = randomBuffer(2000, t, &rng);
      std::vector<uint8_t> out(in.size());
      scale(out.data(), in.data(), 2000, t, factor);
      for (size_t i = 0; i < 2000; ++i) {
        const double x = loadF(in, i, t);
        // float(x * factor) first, as the kernel does, then one correct rounding.
        const double r = static_cast<float>(x * factor);
        const uint16_t want =
            t == DataType::kFloat16 ? test::refRoundToHalf(r) : test::refRoundToBf16(r);
        uint16_t got;
        std::memcpy(&got, out.data() + 2 * i, 2);
        ASSERT_TRUE(got == want || ((got | want) & 0x7fff) == 0)
            << toString(t) << " " << x << " * " << factor;
      }
      // In place (dst == src) gives the same bits.
      std::vector<uint8_t> inPlace = in;
      scale(inPlace.data(), inPlace.data(), 2000, t, factor);
      EXPECT_EQ(inPlace, out) << toString(t) << " * " << factor;
    }
  }
}

TEST(Divide, TowardZeroAndErrors) {
  std::vector<int32_t> v = {7, -7, 6, -1};
  divide(v.data(), 4, DataType::kInt32, 2);
  EXPECT_EQ(v, (std::vector<int32_t>{3, -3, 3, 0}));
  std::vector<int64_t> m = {std::numeric_limits<int64_t>::min(), 9};
  divide(m.data(), 2, DataType::kInt64, -1);
  EXPECT_EQ(m[0], std::numeric_limits<int64_t>::min());  // wraps like negation
  EXPECT_EQ(m[1], -9);
  std::vector<uint8_t> u = {255, 3};
  divide(u.data(), 2, DataType::kUInt8, 4);
  EXPECT_EQ(u, (std::vector<uint8_t>{63, 0}));
  std::vector<float> f = {1.0f, -3.0f};
  divide(f.data(), 2, DataType::kFloat32, 3);
  EXPECT_EQ(f[0], 1.0f / 3.0f);
  EXPECT_EQ(f[1], -1.0f);
  std::vector<uint8_t> b = {1, 0, 2};
  divide(b.data(), 3, DataType::kBool, 1);
  EXPECT_EQ(b, (std::vector<uint8_t>{1, 0, 1}));
  divide(b.data(), 3, DataType::kBool, 2);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_THROW(divide(f.data(), 2, DataType::kFloat32, 0), InvalidArgument);
  // f16: one correct rounding of the true quotient, element by element (the scalar loop) and
  // over every positive finite value at once (the 8-lane path and its tail); bf16 the same.
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    uint16_t x = static_cast<uint16_t>(h);
    divide(&x, 1, DataType::kFloat16, 3);
    ASSERT_EQ(x, test::refRoundToHalf(test::halfValue(h) / 3)) << h;
  }
  for (int d : {3, 7, 1000}) {
    std::vector<uint16_t> all(0x7c00 - 1);
    for (uint32_t h = 0; h < all.size(); ++h) all[h] = static_cast<uint16_t>(h);
    divide(all.data(), all.size(), DataType::kFloat16, d);
    for (uint32_t h = 0; h < all.size(); ++h) {
      ASSERT_EQ(all[h], test::refRoundToHalf(test::halfValue(h) / d)) << "f16 " << h << " / " << d;
    }
    std::vector<uint16_t> bf(0x7f80 - 3);
    for (uint32_t b = 0; b < bf.size(); ++b) bf[b] = static_cast<uint16_t>(b);
    divide(bf.data(), bf.size(), DataType::kBFloat16, d);
    for (uint32_t b = 0; b < bf.size(); ++b) {
      ASSERT_EQ(bf[b], test::refRoundToBf16(test::bf16Value(b) / d)) << "bf16 " << b << " / " << d;
    }
  }
}

// AVG = SUM then divide; PREMUL_SUM = scale each input then SUM: the helpers compose.
TEST(Composition, AvgAndPremulSum) {
  const int world = 4;
  std::vector<std::vector<float>> inputs(world, std::vector<float>(17));
  for (int r = 0; r < world; ++r) {
    for (size_t i = 0; i < 17; ++i) inputs[r][i] = static_cast<float>(r * 10 + i);
  }
  std::vector<float> acc(17, 0.0f), pre(17, 0.0f), tmp(17);
  for (int r = 0; r < world; ++r) {
    reduceInto(acc.data(), inputs[r].data(), 17, DataType::kFloat32, ReduceOp::AVG);
    scale(tmp.data(), inputs[r].data(), 17, DataType::kFloat32, 0.25);
    reduceInto(pre.data(), tmp.data(), 17, DataType::kFloat32, ReduceOp::PREMUL_SUM);
  }
  divide(acc.data(), 17, DataType::kFloat32, world);
  for (size_t i = 0; i < 17; ++i) {
    EXPECT_FLOAT_EQ(acc[i], 15.0f + i);
    EXPECT_FLOAT_EQ(pre[i], 15.0f + i);
  }
}

// x rounded once to f16/bf16 (nearest even; subnormals; f16 overflows to Inf at 65520).
double roundOnceTo(DataType dt, double x) {
  const int p = dt == DataType::kFloat16 ? 11 : 8;
  const int minExp = dt == DataType::kFloat16 ? -14 : -126;
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);
  const double ulp = std::ldexp(1, std::max(e - 1, minExp) + 1 - p);
  const double r = std::nearbyint(x / ulp) * ulp;
  if (dt == DataType::kFloat16 && std::fabs(r) > 65504) return std::copysign(INFINITY, r);
  return r;
}

// narrowHalf(divisor) is src / divisor rounded once, through the 8-lane path and the scalar tail
// alike, on random f32 values with all 24 bits set, signed zeros, Inf and NaN. (Its round-to-odd
// step is what makes this hold by construction; plain f32 division rounded again to the half
// type also passed here: x / d of an f32 x and a small d cannot land within half an f32 ulp of a
// half-way point without being one, except near binade edges, which random values miss.)
TEST(NarrowHalf, DividesAndRoundsOnce) {
  std::mt19937_64 gen(7);
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
    for (int64_t d : {1, 2, 3, 5, 7, 12, 255, 512, 1000}) {
      const size_t n = 100003;  // not a multiple of 8: the scalar tail too
      std::vector<float> src(n);
      std::uniform_real_distribution<float> u(-1, 1);
      std::uniform_int_distribution<int> ex(dt == DataType::kFloat16 ? -20 : -130, 14);
      for (auto& x : src) x = std::ldexp(u(gen), ex(gen));
      src[0] = INFINITY;
      src[1] = -INFINITY;
      src[2] = NAN;
      src[3] = -0.0f;
      std::vector<uint16_t> out(n);
      narrowHalf(out.data(), src.data(), n, dt, d);
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < n; ++i) {
        // The double quotient is exact enough: x / d has no run of ~40 equal bits for d < 2^10.
        const double want = roundOnceTo(dt, static_cast<double>(src[i]) / static_cast<double>(d));
        const double got = dt == DataType::kFloat16 ? halfToFloat(out[i]) : bf16ToFloat(out[i]);
        const bool ok = std::isnan(want) ? std::isnan(got)
                                         : got == want && std::signbit(got) == std::signbit(want);
        if (!ok && bad++ == 0) first = i;
      }
      EXPECT_EQ(bad, 0u) << toString(dt) << " / " << d << ": first at " << first << ": "
                         << src[first] << " / " << d << " gave "
                         << (dt == DataType::kFloat16 ? halfToFloat(out[first])
                                                      : bf16ToFloat(out[first]));
    }
  }
  std::vector<float> w(9);
  const std::vector<uint16_t> h = {0x3c00, 0x3c01, 0xbc00, 0x0001, 0x7bff,
                                   0x7c00, 0x0000, 0x8000, 0x3555};
  widenHalf(w.data(), h.data(), h.size(), DataType::kFloat16);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(w[i], halfToFloat(h[i])) << i;
  EXPECT_THROW(narrowHalf(w.data(), w.data(), 1, DataType::kFloat32, 1), InvalidArgument);
}

// Not a benchmark, just a guard against a per-element dispatch creeping in; prints GB/s
// (bytes read + written per second) for a cache-resident and a memory-sized f32 sum, and f16.
double sumThroughput(DataType t, size_t n, int iters) {
  std::vector<uint8_t> a(n * elementSize(t)), b(n * elementSize(t));
  reduceInto(a.data(), b.data(), n, t, ReduceOp::SUM);  // warm up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) reduceInto(a.data(), b.data(), n, t, ReduceOp::SUM);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gbps = 3.0 * n * elementSize(t) * iters / s / 1e9;
  std::printf("reduceInto %s sum, %zu elements: %.2f GB/s\n", toString(t), n, gbps);
  return gbps;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kMinGBps = 0.0;  // instrumented builds: print only
#else
constexpr double kMinGBps = 0.3;
#endif

TEST(ReduceInto, SumThroughput) {
  EXPECT_GE(sumThroughput(DataType::kFloat32, 16 << 10, 4000), kMinGBps);
  EXPECT_GE(sumThroughput(DataType::kFloat32, 8 << 20, 5), kMinGBps);
  EXPECT_GE(sumThroughput(DataType::kFloat64, 8 << 10, 4000), kMinGBps);
  EXPECT_GE(sumThroughput(DataType::kFloat16, 16 << 10, 200), kMinGBps / 30);
  EXPECT_GE(sumThroughput(DataType::kBFloat16, 16 << 10, 200), kMinGBps / 30);
  EXPECT_GE(sumThroughput(DataType::kInt32, 16 << 10, 4000), kMinGBps);
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
