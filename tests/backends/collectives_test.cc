// Conformance: every collective x dtype x supported reduce op x count {0, 1, 7}, plus a
// representative subset at 1,000,003 elements, per backend and world size {1, 2, 3, 4, 8}.
// The full sweep at 1,000,003 elements is sweep_test.cc (ctest label "sweep").
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

class Collectives : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(Collectives, EveryOpDtypeAndCount) {
  const BackendParam p = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("collectives");
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(280);
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        auto pg = makeGroup(p, path, rank, size);
        // Every dtype and count at every world size, 8 included (8 ranks on 2 cores: counts 0
        // and 1 there give most ranks empty chunks in reduce_scatter / allgather).
        SweepOptions small;
        runSweep(*pg, p, small);
        // Representative large cases: a few (dtype, op) reductions, and f32 data movement.
        SweepOptions big;
        big.counts = {1000003};
        big.only = {{DataType::kFloat32, ReduceOp::SUM},
                    {DataType::kInt32, ReduceOp::MAX},
                    {DataType::kBFloat16, ReduceOp::SUM},
                    {DataType::kFloat16, ReduceOp::AVG},
                    {DataType::kFloat64, ReduceOp::PREMUL_SUM}};
        if (size >= 8) big.only.resize(2);
        big.dataMovement = false;
        big.pointToPoint = false;
        runSweep(*pg, p, big);
        big.only = {{DataType::kFloat32, ReduceOp::SUM}};
        big.reductions = false;
        big.dataMovement = true;
        big.pointToPoint = true;
        runSweep(*pg, p, big);
      },
      mp);
}

INSTANTIATE_TEST_SUITE_P(Backends, Collectives,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4, 8})),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Collectives);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
