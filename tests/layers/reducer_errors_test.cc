// Reducer: the start-up comparison across ranks (count, numel, dtype differing on one rank is an
// InvalidArgument on every rank naming that rank and the index), the start-up and per-step buffer
// broadcast, and every misuse error with its message. Every CPU backend, world sizes 1-4.
#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/layers/reducer_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using ddp::Reducer;
using ddp::ReducerOptions;

class ReducerErrorsTest : public ReducerTest {};

TEST_P(ReducerErrorsTest, StartupMismatchIsAnErrorOnEveryRank) {
  if (ws() < 2) GTEST_SKIP() << "needs two ranks";
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-mismatch");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const int odd = size - 1;  // the rank whose model differs
    const std::string oddRank = "rank " + std::to_string(odd);
    const std::vector<ParamSpec> base = mixedSpecs(4);  // layer0.weight f32 17, layer0.bias f32 4,
                                                        // layer1.weight f64 43, layer1.bias f32 6
    auto attempt = [&](std::vector<ParamSpec> specs, std::vector<size_t> bufferNumels,
                       const std::vector<std::string>& parts, const std::string& what) {
      TestModel m(std::move(specs));
      std::vector<std::vector<float>> storage;
      std::vector<ddp::NamedBuffer> buffers;
      for (size_t n : bufferNumels) storage.emplace_back(n, 0.f);
      for (size_t i = 0; i < storage.size(); ++i) {
        buffers.push_back({"bn" + std::to_string(i) + ".running_mean",
                           tensorOf(storage[i].data(), storage[i].size())});
      }
      expectThrowWith<InvalidArgument>(
          [&] { Reducer red(m.parameters(), pg, ReducerOptions(), buffers); }, parts, what);
    };

    std::vector<ParamSpec> extra = base;
    if (rank == odd) extra.push_back({5, DataType::kFloat32, "extra.weight"});
    attempt(extra, {}, {oddRank + " has 5 parameters", "parameter 4", "differs across ranks"},
            "parameter count");

    std::vector<ParamSpec> numel = base;
    if (rank == odd) numel[2].numel += 1;
    attempt(numel, {},
            {"parameter 2 ('layer1.weight')", oddRank + " has 44 elements of double",
             "has 43 elements of double"},
            "numel");

    std::vector<ParamSpec> dtype = base;
    if (rank == odd) dtype[1].dtype = DataType::kFloat64;
    attempt(dtype, {},
            {"parameter 1 ('layer0.bias')", oddRank + " has 4 elements of double",
             "has 4 elements of float"},
            "dtype");

    attempt(base, {3, rank == odd ? size_t{5} : size_t{4}},
            {"buffer 1 ('bn1.running_mean')", oddRank + " has 5 elements of float"},
            "buffer numel");
    attempt(base, rank == odd ? std::vector<size_t>{3} : std::vector<size_t>{3, 4},
            {oddRank + " has 4 parameters and 1 buffers", "buffer 1"}, "buffer count");

    // The group is still in step: a matching model works.
    TestModel m(base);
    Reducer red(m.parameters(), pg);
    for (size_t p = m.size(); p-- > 0;) produceGrad(red, m, rank, p, 0);
    red.finalize();
    for (size_t p = 0; p < m.size(); ++p) {
      expectTensor(
          m.grad(p), [&](size_t e) { return meanGrad(size, p, e, 0); }, 1e-6, "after mismatches");
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerErrorsTest, BuffersAreBroadcastFromRankZero) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-buffers");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (bool broadcastBuffers : {true, false}) {
      TestModel m(mixedSpecs(3));
      std::vector<double> stats(9, 0.0);
      std::vector<int64_t> steps(1, 0);
      for (size_t i = 0; i < stats.size(); ++i) stats[i] = rank * 100.0 + i;
      steps[0] = rank + 7;
      ReducerOptions opts;
      opts.broadcastBuffers = broadcastBuffers;
      Reducer red(m.parameters(), pg, opts,
                  {{"bn.running_var", tensorOf(stats.data(), stats.size())},
                   {"bn.num_batches_tracked", tensorOf(steps.data(), 1)}});
      for (size_t i = 0; i < stats.size(); ++i) EXPECT_EQ(stats[i], static_cast<double>(i));
      EXPECT_EQ(steps[0], 7) << "start-up always broadcasts buffers";
      if (rank == 0) stats[4] = -1.5, steps[0] = 8;
      red.syncBuffers();
      const bool moved = broadcastBuffers || rank == 0;
      EXPECT_EQ(stats[4], moved ? -1.5 : 4.0);
      EXPECT_EQ(steps[0], moved ? 8 : 7);
    }
    (void)size;
    pg->barrier()->wait();
  });
}

TEST_P(ReducerErrorsTest, MisuseIsAClearErrorNamingTheParameter) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-misuse");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    // Construction (checked locally, before any communication).
    {
      TestModel m(mixedSpecs(3));
      auto params = m.parameters();
      params[1].grad.numel -= 1;
      expectThrowWith<InvalidArgument>([&] { Reducer red(params, pg); },
                                       {"parameter 1 ('layer0.bias')", "does not match its data"},
                                       "grad of another size");
      params = m.parameters();
      params[2].data.data = nullptr;
      expectThrowWith<InvalidArgument>([&] { Reducer red(params, pg); },
                                       {"parameter 2 ('layer1.weight')", "null data"}, "null data");
      expectThrowWith<InvalidArgument>([&] { Reducer red({}, pg); }, {"no parameters"},
                                       "no parameters");
    }
    TestModel m(mixedSpecs(4));  // f32: 0, 1, 3; f64: 2
    Reducer red(m.parameters(), pg);
    expectThrowWith<InvalidArgument>([&] { red.markReady(4); },
                                     {"parameter index 4 out of range", "4 parameters"},
                                     "index out of range");
    expectThrowWith<InvalidArgument>([&] { red.gradView(0); }, {"gradientAsBucketView"},
                                     "gradView without views");
    expectThrowWith<InvalidArgument>([&] { red.markReady(0, m.grad(0)); },
                                     {"markReady(0, grad)", "gradientAsBucketView"},
                                     "an outside gradient without views");
    {
      ReducerOptions vo;
      vo.gradientAsBucketView = true;
      Reducer viewed(m.parameters(), pg, vo);
      Tensor shorter = m.grad(2);
      shorter.numel -= 1;
      expectThrowWith<InvalidArgument>([&] { viewed.markReady(2, shorter); },
                                       {"parameter 2 ('layer1.weight')", "the gradient given"},
                                       "an outside gradient of another size");
    }
    produceGrad(red, m, rank, 3, 0);
    expectThrowWith<InvalidArgument>(
        [&] { red.markReady(3); },
        {"parameter 3 ('layer1.bias') was marked ready twice in iteration 1"}, "marked twice");
    expectThrowWith<InvalidArgument>(
        [&] { red.noSync(); }, {"middle of synced iteration 1", "1 of 4"}, "noSync mid-iteration");
    // Those errors changed nothing: finish the iteration normally.
    for (size_t p : {2, 1, 0}) produceGrad(red, m, rank, p, 0);
    red.finalize();
    for (size_t p = 0; p < m.size(); ++p) {
      expectTensor(
          m.grad(p), [&](size_t e) { return meanGrad(size, p, e, 0); }, 1e-6, "after misuse");
    }
    // Every rank forgets parameter 2 (the f64 bucket never fills; the f32 one is in flight).
    for (size_t p : {3, 1, 0}) produceGrad(red, m, rank, p, 1);
    expectThrowWith<InvalidArgument>(
        [&] { red.finalize(); },
        {"expected to have finished reduction in iteration 2", "1 of 4 parameters",
         "parameter 2 ('layer1.weight')", "findUnusedParameters"},
        "finalize with an unmarked parameter");
    expectThrowWith<Error>([&] { red.markReady(0); },
                           {"unusable", "expected to have finished reduction"}, "after failure");
    expectThrowWith<Error>([&] { red.finalize(); }, {"unusable"}, "finalize after failure");
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReducerErrorsTest,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})), caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReducerErrorsTest);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
