// Tests for c10d/base/types.h: element sizes, names, parsing, Tensor::slice and the f16/bf16
// conversions (checked exhaustively against a table-based reference rounding).
#include "c10d/base/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/float16.h"
#include "tests/core/float16_reference.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

TEST(Types, ElementSizeAndNames) {
  const struct {
    DataType t;
    size_t size;
    const char* name;
  } kCases[] = {
      {DataType::kFloat32, 4, "float"}, {DataType::kFloat64, 8, "double"},
      {DataType::kFloat16, 2, "half"},  {DataType::kBFloat16, 2, "bfloat16"},
      {DataType::kInt8, 1, "int8"},     {DataType::kUInt8, 1, "uint8"},
      {DataType::kInt32, 4, "int32"},   {DataType::kInt64, 8, "int64"},
      {DataType::kBool, 1, "bool"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(elementSize(c.t), c.size) << c.name;
    EXPECT_STREQ(toString(c.t), c.name);
    EXPECT_EQ(parseDataType(c.name), c.t) << c.name;
  }
  EXPECT_THROW(elementSize(static_cast<DataType>(42)), InvalidArgument);
}

TEST(Types, ParseAliasesAndErrors) {
  EXPECT_EQ(parseDataType("f32"), DataType::kFloat32);
  EXPECT_EQ(parseDataType("fp16"), DataType::kFloat16);
  EXPECT_EQ(parseDataType("bf16"), DataType::kBFloat16);
  EXPECT_EQ(parseDataType("int"), DataType::kInt32);
  EXPECT_EQ(parseDataType("u8"), DataType::kUInt8);
  try {
    parseDataType("float128");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("float128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parseDataType(""), InvalidArgument);
  EXPECT_TRUE(isFloatingPoint(DataType::kBFloat16));
  EXPECT_FALSE(isFloatingPoint(DataType::kBool));
  EXPECT_TRUE(isIntegral(DataType::kBool));
  EXPECT_TRUE(isIntegral(DataType::kUInt8));
}

TEST(Types, DeviceAndSlice) {
  EXPECT_EQ(toString(Device::cpu()), "cpu");
  EXPECT_EQ(toString(Device::cuda(3)), "cuda:3");
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  std::vector<int64_t> v(10);
  Tensor t = tensorOf(v.data(), v.size());
  EXPECT_EQ(t.nbytes(), 80u);
  Tensor s = t.slice(3, 4);
  EXPECT_EQ(s.ptr<int64_t>(), v.data() + 3);
  EXPECT_EQ(s.numel, 4u);
  EXPECT_NO_THROW(t.slice(10, 0));
  EXPECT_THROW(t.slice(7, 4), InvalidArgument);
}

TEST(Types, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f)))) << h;
    } else {
      ASSERT_EQ(floatToHalf(f), h) << "half 0x" << std::hex << h << " -> " << f;
      // The reference table agrees on the value.
      if (std::isfinite(f)) {
        ASSERT_EQ(static_cast<double>(f), test::halfValue(h)) << h;
      }
    }
  }
}

TEST(Types, BFloat16RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(f)))) << b;
    } else {
      ASSERT_EQ(floatToBf16(f), b) << b;
    }
  }
}

// floatToHalf/floatToBf16 against the reference round-to-nearest-even, on random floats spanning
// every exponent plus the exact midpoints between neighbouring halves (the ties).
TEST(Types, RoundingMatchesReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = bits(rng);
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), test::refRoundToHalf(f)) << "float " << f;
    ASSERT_EQ(floatToBf16(f), test::refRoundToBf16(f)) << "float " << f;
  }
  // Ties between consecutive halves (representable in float): must go to the even one.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const double mid = (test::halfValue(h) + test::halfValue(h + 1)) / 2;
    const float f = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(f), mid);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    ASSERT_EQ(floatToHalf(f), even) << "tie after half 0x" << std::hex << h;
    ASSERT_EQ(floatToHalf(-f), even | 0x8000) << "negative tie after half 0x" << std::hex << h;
  }
  // Overflow and underflow edges.
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // exactly half the smallest: even
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);  // above the tie
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToBf16(3.0e38f), test::refRoundToBf16(3.0e38f));
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
}

// The inline conversions the kernels use (c10d/base/float16.h) agree with the exported ones.
TEST(Types, InlineConversionsMatchExported) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    const float a = halfToFloat(v);
    const float b = detail::halfToFloatInline(v);
    ASSERT_TRUE(std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b))) << h;
    const float c = bf16ToFloat(v);
    const float d = detail::bf16ToFloatInline(v);
    ASSERT_EQ(std::memcmp(&c, &d, 4), 0) << h;
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 500000; ++i) {
    const uint32_t x = bits(rng);
    float f;
    std::memcpy(&f, &x, 4);
    ASSERT_EQ(floatToHalf(f), detail::floatToHalfInline(f)) << f;
    ASSERT_EQ(floatToBf16(f), detail::floatToBf16Inline(f)) << f;
  }
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
