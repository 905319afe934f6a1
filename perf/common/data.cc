#include "perf/common/data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Largest magnitude whose sums stay exact (integer-valued) in the type, capped to keep values
// small.
int64_t exactCap(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return 127;
    case DataType::kUInt8:
      return 255;
    case DataType::kFloat16:
      return 2048;
    case DataType::kBFloat16:
      return 256;
    default:
      return 1 << 20;
  }
}

double tolerance(DataType t) {
  switch (t) {
    case DataType::kFloat16:
      return 2e-3;
    case DataType::kBFloat16:
      return 1.6e-2;
    case DataType::kFloat32:
      return 1e-5;
    case DataType::kFloat64:
      return 1e-12;
    default:
      return 0;
  }
}

}  // namespace

double premulScalar(int rank) {
  return rank % 2 == 0 ? 1.0 : 2.0;
}

double inputValue(size_t index, int seed, int rank, DataType dtype, ReduceOp::Kind op, int nranks) {
  const uint64_t h = mix(index * 0x100000001b3ULL ^
                         mix(static_cast<uint64_t>(seed) << 20 ^ static_cast<uint64_t>(rank)));
  const int64_t cap = exactCap(dtype);
  switch (op) {
    case ReduceOp::PRODUCT:
      return (h % 8 == 0) ? 2.0 : 1.0;  // products of 1s and rare 2s stay exact
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      return static_cast<double>(h % static_cast<uint64_t>(cap));
    default: {
      // SUM, AVG, PREMUL_SUM (scale up to 2): the total over nranks stays below cap.
      const int64_t scaleMax = op == ReduceOp::PREMUL_SUM ? 2 : 1;
      const int64_t m = std::max<int64_t>(1, cap / (std::max(1, nranks) * scaleMax));
      return static_cast<double>(h % static_cast<uint64_t>(m));
    }
  }
}

double loadElement(const void* buf, size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return static_cast<const float*>(buf)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(buf)[i];
    case DataType::kFloat16:
      return halfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kBFloat16:
      return bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kInt8:
      return static_cast<const int8_t*>(buf)[i];
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(buf)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::kBool:
      return static_cast<const uint8_t*>(buf)[i] != 0;
  }
  return 0;
}

void storeElement(void* buf, size_t i, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = floatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = floatToBf16(static_cast<float>(v));
      break;
    // Integers wrap as the type does (two's complement), like the backends' arithmetic.
    case DataType::kInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case DataType::kUInt8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(static_cast<int64_t>(v));
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case DataType::kBool:
      static_cast<uint8_t*>(buf)[i] = v != 0;
      break;
  }
}

void fillInput(void* buf, size_t count, size_t offset, DataType dtype, ReduceOp::Kind op, int seed,
               int rank, int nranks) {
  for (size_t i = 0; i < count; ++i) {
    storeElement(buf, i, dtype, inputValue(offset + i, seed, rank, dtype, op, nranks));
  }
}

void fillReduced(void* buf, size_t count, size_t offset, DataType dtype, ReduceOp::Kind op,
                 int seed, int nranks) {
  const bool integral = isIntegral(dtype);
  for (size_t i = 0; i < count; ++i) {
    // Integers accumulate in uint64 (wrapping, then truncated to the type on store: the same
    // residue the type's own wrapping arithmetic gives); floats in double (exact for our values).
    uint64_t iacc = op == ReduceOp::PRODUCT ? 1 : 0;
    double acc = op == ReduceOp::PRODUCT ? 1.0 : 0.0;
    for (int r = 0; r < nranks; ++r) {
      double v = inputValue(offset + i, seed, r, dtype, op, nranks);
      if (op == ReduceOp::PREMUL_SUM) v *= premulScalar(r);
      const uint64_t iv = static_cast<uint64_t>(static_cast<int64_t>(v));
      switch (op) {
        case ReduceOp::PRODUCT:
          iacc *= iv;
          acc *= v;
          break;
        case ReduceOp::MIN:
          acc = r == 0 ? v : std::min(acc, v);
          break;
        case ReduceOp::MAX:
          acc = r == 0 ? v : std::max(acc, v);
          break;
        default:  // SUM, AVG, PREMUL_SUM
          iacc += iv;
          acc += v;
          break;
      }
    }
    if (integral &&
        (op == ReduceOp::SUM || op == ReduceOp::PRODUCT || op == ReduceOp::PREMUL_SUM)) {
      acc = static_cast<double>(static_cast<int64_t>(iacc));
    }
    if (op == ReduceOp::AVG) {
      acc = integral ? std::trunc(acc / nranks) : acc / nranks;
    }
    storeElement(buf, i, dtype, acc);
  }
}

void corruptElement(void* buf, size_t i, DataType dtype) {
  const double v = loadElement(buf, i, dtype);
  // +7 never wraps back to v in an integer type; 2v + 7 is far from v for our values (>= 0).
  storeElement(buf, i, dtype, isIntegral(dtype) ? v + 7 : 2 * v + 7);
}

int64_t countWrong(const void* got, const void* expected, size_t count, DataType dtype) {
  const size_t es = elementSize(dtype);
  if (isIntegral(dtype)) {
    int64_t wrong = 0;
    const auto* a = static_cast<const uint8_t*>(got);
    const auto* b = static_cast<const uint8_t*>(expected);
    for (size_t i = 0; i < count; ++i) wrong += std::memcmp(a + i * es, b + i * es, es) != 0;
    return wrong;
  }
  const double tol = tolerance(dtype);
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double g = loadElement(got, i, dtype);
    const double e = loadElement(expected, i, dtype);
    if (g == e) continue;  // also equal infinities
    if (!(std::fabs(g - e) <= tol * std::max(1.0, std::fabs(e)))) ++wrong;
  }
  return wrong;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
