// The conformance suite's input values keep the promises conformance.h makes: exactly
// representable, distinct per (seed, element), and summed (or multiplied) without rounding or
// overflow by up to 8 ranks in any order. In-process; no backend involved.
#include <cmath>
#include <limits>
#include <set>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

bool representable(DataType dt, double v) {
  if (storedValue(dt, v) != v) return false;
  switch (dt) {
    case DataType::kInt8:
      return v >= -128 && v <= 127;
    case DataType::kUInt8:
      return v >= 0 && v <= 255;
    case DataType::kInt32:
      return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    case DataType::kInt64:
      return std::fabs(v) < std::ldexp(1.0, 53);
    case DataType::kFloat16:
      return std::fabs(v) <= 65504;
    default:
      return true;
  }
}

std::vector<ReduceOp> everyOp(DataType dt) {
  std::vector<ReduceOp> out;
  for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
    const auto kind = static_cast<ReduceOp::Kind>(k);
    if (!isDefined(kind, dt)) continue;
    out.push_back(kind == ReduceOp::PREMUL_SUM ? ReduceOp::premulSum(premulScale(dt))
                                               : ReduceOp(kind));
  }
  return out;
}

// The seeds one op can see side by side: ranks (and alltoall's from * size + to, up to 63), and
// the roots' seeds of the semantics tests.
std::vector<int> seeds(int upTo) {
  std::vector<int> s;
  for (int i = 0; i < upTo; ++i) s.push_back(i);
  for (int root : {42, 77}) {
    if (root >= upTo) s.push_back(root);
  }
  return s;
}

TEST(ConformanceValues, MovementValuesAreExactAndDifferAtEveryElement) {
  for (DataType dt : allDataTypes()) {
    if (dt == DataType::kBool) continue;
    const std::vector<int> ss = seeds(64);
    for (size_t i = 0; i < 300; ++i) {
      std::set<double> atI;
      for (int s : ss) {
        const double v = movementValue(dt, s, i);
        ASSERT_TRUE(representable(dt, v)) << toString(dt) << " seed " << s << " element " << i;
        atI.insert(v);
      }
      // Every seed differs from every other at this element: a slot from the wrong rank never
      // matches anywhere.
      ASSERT_EQ(atI.size(), ss.size()) << toString(dt) << " element " << i;
    }
    // Within one seed, the first 256 elements are distinct (a shift within a slot fails).
    for (int s : {0, 5, 77}) {
      std::set<double> elements;
      for (size_t i = 0; i < 256; ++i) elements.insert(movementValue(dt, s, i));
      EXPECT_EQ(elements.size(), 256u) << toString(dt) << " seed " << s;
    }
  }
}

TEST(ConformanceValues, InputValuesDifferPerRankAndRootSeed) {
  for (DataType dt : allDataTypes()) {
    if (dt == DataType::kBool) continue;
    for (const ReduceOp& op : everyOp(dt)) {
      if (op.kind == ReduceOp::PRODUCT) continue;  // mostly 1 by design (see below)
      const std::vector<int> ss = seeds(8);
      for (size_t i = 0; i < 1000; ++i) {
        std::set<double> atI;
        for (int s : ss) atI.insert(inputValue(dt, op, s, i));
        ASSERT_EQ(atI.size(), ss.size()) << toString(dt) << " " << toString(op) << " element " << i;
      }
      // Per rank, elements repeat with a period of at least 16 (int8 sums: 32 values).
      for (int s = 0; s < 8; ++s) {
        std::set<double> elements;
        for (size_t i = 0; i < 16; ++i) elements.insert(inputValue(dt, op, s, i));
        EXPECT_EQ(elements.size(), 16u) << toString(dt) << " " << toString(op) << " rank " << s;
      }
    }
  }
}

// Bool has two values: any 7 consecutive elements of two seeds below 128 differ somewhere.
TEST(ConformanceValues, BoolChunksOfSevenDifferAcrossSeeds) {
  for (size_t offset : {size_t{0}, size_t{3}, size_t{7}, size_t{1000}}) {
    std::set<std::vector<double>> chunks;
    for (int s = 0; s < 128; ++s) {
      std::vector<double> c;
      for (size_t i = 0; i < 7; ++i) c.push_back(movementValue(DataType::kBool, s, offset + i));
      chunks.insert(c);
    }
    EXPECT_EQ(chunks.size(), 128u) << "offset " << offset;
  }
}

// Every subset of up to 8 ranks' inputs sums (or multiplies) exactly, so the reduction order of a
// backend cannot change a result: the suite compares exactly.
TEST(ConformanceValues, PartialReductionsOfEightRanksAreExact) {
  for (DataType dt : allDataTypes()) {
    if (dt == DataType::kBool) continue;
    for (const ReduceOp& op : everyOp(dt)) {
      const bool sums =
          op.kind == ReduceOp::SUM || op.kind == ReduceOp::AVG || op.kind == ReduceOp::PREMUL_SUM;
      if (!sums && op.kind != ReduceOp::PRODUCT) continue;
      for (size_t i = 0; i < 500; ++i) {
        double v[8];
        for (int r = 0; r < 8; ++r) {
          v[r] = inputValue(dt, op, r, i);
          if (op.kind == ReduceOp::PREMUL_SUM) v[r] = storedValue(dt, v[r] * op.scale);
        }
        for (unsigned mask = 1; mask < 256; ++mask) {
          double acc = sums ? 0 : 1;
          for (int r = 0; r < 8; ++r) {
            if (mask & (1u << r)) acc = sums ? acc + v[r] : acc * v[r];
          }
          ASSERT_TRUE(representable(dt, acc)) << toString(dt) << " " << toString(op) << " element "
                                              << i << " ranks mask " << mask << ": " << acc;
        }
      }
    }
  }
}

// PRODUCT results still vary with the element at every world size (so a misplaced reduce-scatter
// chunk fails), including 8 ranks.
TEST(ConformanceValues, ProductsVaryWithTheElement) {
  for (DataType dt : {DataType::kFloat32, DataType::kInt8, DataType::kUInt8}) {
    for (int size = 2; size <= 8; ++size) {
      std::set<double> results;
      for (size_t i = 0; i < 16; ++i) results.insert(reference(dt, ReduceOp::PRODUCT, size, i));
      EXPECT_GE(results.size(), 3u) << toString(dt) << " world size " << size;
    }
  }
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
