// assignBuckets against an assignment worked out by hand, and FlatBuffer's views.
#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/layers/common/bucket_assignment.h"
#include "c10d/layers/common/flat_buffer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {
namespace {

TEST(AssignBuckets, PerDtypeFirstBucketSmallThenCapped) {
  const std::vector<TensorSpec> specs{
      {10, DataType::kFloat32},  // 0: 40 B
      {10, DataType::kFloat32},  // 1: 40 B
      {4, DataType::kFloat64},   // 2: 32 B
      {30, DataType::kFloat32},  // 3: 120 B
      {5, DataType::kFloat32},   // 4: 20 B
      {20, DataType::kFloat64},  // 5: 160 B
  };
  // Visiting 5, 4, 3, 2, 1, 0 with limits {64, 100}:
  //   5 (f64) 160 >= 64: closes {5}; f64 now at 100.   4 (f32): {4} 20.
  //   3 (f32) {4, 3} 140 >= 64: closes; f32 now at 100. 2 (f64): {2} 32.
  //   1, 0 (f32): {1, 0} 80 < 100. Left open: {2}, {1, 0}.
  const auto b = assignBuckets(specs, reverseOrder(6), {64, 100});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].members, std::vector<size_t>({5}));
  EXPECT_EQ(b[1].members, std::vector<size_t>({4, 3}));
  EXPECT_EQ(b[2].members, std::vector<size_t>({2}));
  EXPECT_EQ(b[3].members, std::vector<size_t>({1, 0}));
  EXPECT_EQ(b[0].dtype, DataType::kFloat64);
  EXPECT_EQ(b[1].dtype, DataType::kFloat32);
  EXPECT_EQ(b[0].bytes, 160u);
  EXPECT_EQ(b[1].bytes, 140u);
  EXPECT_EQ(b[2].bytes, 32u);
  EXPECT_EQ(b[3].bytes, 80u);

  // One limit: every bucket closes at it. Visiting order 0..5 with 1 byte: one tensor each.
  const auto one = assignBuckets(specs, {0, 1, 2, 3, 4, 5}, {1});
  ASSERT_EQ(one.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(one[i].members, std::vector<size_t>({i}));
  // A huge limit: one bucket per dtype, ordered by first member.
  const auto big = assignBuckets(specs, {2, 0, 1, 3, 4, 5}, {1u << 30});
  ASSERT_EQ(big.size(), 2u);
  EXPECT_EQ(big[0].members, std::vector<size_t>({2, 5}));
  EXPECT_EQ(big[1].members, std::vector<size_t>({0, 1, 3, 4}));
  EXPECT_TRUE(assignBuckets({}, {}, {64}).empty());
}

TEST(AssignBuckets, SeparatesDevices) {
  const std::vector<TensorSpec> specs{{4, DataType::kFloat32, Device::cpu()},
                                      {4, DataType::kFloat32, Device::cuda(0)},
                                      {4, DataType::kFloat32, Device::cpu()}};
  const auto b = assignBuckets(specs, {0, 1, 2}, {1u << 20});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].members, std::vector<size_t>({0, 2}));
  EXPECT_EQ(b[1].members, std::vector<size_t>({1}));
  EXPECT_EQ(b[1].device, Device::cuda(0));
}

TEST(AssignBuckets, RejectsBadArguments) {
  const std::vector<TensorSpec> specs(3, TensorSpec{1, DataType::kFloat32});
  EXPECT_THROW(assignBuckets(specs, {0, 1}, {64}), InvalidArgument);
  EXPECT_THROW(assignBuckets(specs, {0, 1, 1}, {64}), InvalidArgument);
  EXPECT_THROW(assignBuckets(specs, {0, 1, 3}, {64}), InvalidArgument);
  EXPECT_THROW(assignBuckets(specs, {0, 1, 2}, {}), InvalidArgument);
  EXPECT_THROW(assignBuckets(specs, {0, 1, 2}, {64, 0}), InvalidArgument);
}

TEST(FlatBuffer, MembersAreContiguousZeroedViews) {
  FlatBuffer f(DataType::kFloat64, Device::cpu(), {3, 0, 5}, *cpuDeviceOps());
  EXPECT_EQ(f.size(), 3u);
  EXPECT_EQ(f.numel(), 8u);
  EXPECT_EQ(f.nbytes(), 64u);
  EXPECT_EQ(f.offset(2), 3u);
  EXPECT_EQ(f.view(2).numel, 5u);
  EXPECT_EQ(f.view(2).ptr<double>(), f.tensor().ptr<double>() + 3);
  for (size_t i = 0; i < f.numel(); ++i) EXPECT_EQ(f.tensor().ptr<double>()[i], 0.0);
  // The storage outlives the buffer for whoever holds it (a collective in flight).
  std::shared_ptr<void> keep = f.storage();
  double* p = f.tensor().ptr<double>();
  f = FlatBuffer();
  p[7] = 1.5;
  EXPECT_EQ(static_cast<double*>(keep.get())[7], 1.5);
}

TEST(CpuDeviceOps, CopyZeroDivide) {
  auto ops = cpuDeviceOps();
  std::vector<float> a{2, 4, 6}, b(3, 0);
  ops->copy(tensorOf(b.data(), 3), tensorOf(a.data(), 3));
  EXPECT_EQ(b, a);
  ops->divide(tensorOf(b.data(), 3), 2);
  EXPECT_EQ(b, std::vector<float>({1, 2, 3}));
  ops->zero(tensorOf(b.data(), 3));
  EXPECT_EQ(b, std::vector<float>(3, 0));
  EXPECT_THROW(ops->zero(Tensor(b.data(), 3, DataType::kFloat32, Device::cuda(0))),
               InvalidArgument);
}

}  // namespace
}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
