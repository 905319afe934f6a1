#include "c10d/base/types.h"

#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

size_t elementSize(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kBool:
      return 1;
  }
  C10D_THROW(InvalidArgument, "unknown DataType ", static_cast<int>(t));
}

const char* toString(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kFloat16:
      return "half";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
  }
  return "unknown";
}

DataType parseDataType(const std::string& name) {
  struct Alias {
    const char* name;
    DataType type;
  };
  static const Alias kAliases[] = {
      {"float", DataType::kFloat32},     {"float32", DataType::kFloat32},
      {"f32", DataType::kFloat32},       {"fp32", DataType::kFloat32},
      {"double", DataType::kFloat64},    {"float64", DataType::kFloat64},
      {"f64", DataType::kFloat64},       {"fp64", DataType::kFloat64},
      {"half", DataType::kFloat16},      {"float16", DataType::kFloat16},
      {"f16", DataType::kFloat16},       {"fp16", DataType::kFloat16},
      {"bfloat16", DataType::kBFloat16}, {"bf16", DataType::kBFloat16},
      {"int8", DataType::kInt8},         {"i8", DataType::kInt8},
      {"uint8", DataType::kUInt8},       {"u8", DataType::kUInt8},
      {"int32", DataType::kInt32},       {"int", DataType::kInt32},
      {"i32", DataType::kInt32},         {"int64", DataType::kInt64},
      {"i64", DataType::kInt64},         {"bool", DataType::kBool},
  };
  for (const auto& a : kAliases) {
    if (name == a.name) return a.type;
  }
  C10D_THROW(InvalidArgument, "unknown data type '", name,
             "' (expected one of float, double, half, bfloat16, int8, uint8, int32, int64, bool)");
}

bool isFloatingPoint(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16;
}

bool isIntegral(DataType t) {
  return !isFloatingPoint(t);
}

std::string toString(const Device& d) {
  return d.isCPU() ? std::string("cpu") : "cuda:" + std::to_string(d.index);
}

Tensor Tensor::slice(size_t offset, size_t count) const {
  C10D_CHECK_ARG(offset + count <= numel, "slice [", offset, ", ", offset + count,
                 ") out of range for a tensor of ", numel, " elements");
  Tensor t = *this;
  t.data = data == nullptr ? nullptr : static_cast<char*>(data) + offset * elementSize(dtype);
  t.numel = count;
  return t;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) {  // inf or nan
    return sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0);
  }
  if (absx >= 0x477ff000) {  // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  }
  if (absx < 0x38800000) {               // below the smallest normal half: subnormal or zero
    if (absx < 0x33000000) return sign;  // < 2^-25 rounds to zero
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // 14 - (e - 127) + 13 - 1 ... value = m * 2^(e-150)
    // half subnormal unit is 2^-24: result = m * 2^(e-150+24) = m >> (126 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t r = absx - 0x38000000;  // rebias exponent 127 -> 15 (<<23 then >>13)
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return sign | static_cast<uint16_t>(r);
}

float bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

C10D_NAMESPACE_END
}  // namespace c10d
