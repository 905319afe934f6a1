// The full large-count sweep: every collective x dtype x supported reduce op at 1,000,003
// elements, per backend and world size. Slow (minutes); ctest label "sweep".
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

class LargeSweep : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(LargeSweep, EveryOpDtypeAtOneMillionAndThree) {
  const BackendParam p = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("sweep");
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(1700);
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        auto pg = makeGroup(p, path, rank, size, Milliseconds(600000));
        SweepOptions big;
        big.counts = {1000003};
        runSweep(*pg, p, big);
      },
      mp);
}

INSTANTIATE_TEST_SUITE_P(Backends, LargeSweep,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4, 8})),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LargeSweep);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
