// ShardedOptimizer errors: a bad argument or a mismatch on one rank is the same InvalidArgument on
// every rank, naming the rank and the parameter index (never a hang), and the group stays usable;
// every misuse error (markReady twice / out of range / with a gradient that does not fit,
// consolidateState with a bad rank, loadState with a state that does not fit) names what is wrong
// and leaves the optimizer usable; a failed collective makes it refuse further use. Every CPU
// backend, world sizes 1-4.
#include <chrono>
#include <cmath>
#include <thread>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/layers/zero_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using zero::ShardedOptimizer;
using zero::ZeroOptions;
using Mode = ZeroOptions::GradReduction;

const std::vector<size_t> kNumels{6, 11, 4, 9};

class ZeroErrorsTest : public ZeroTest {};

TEST_P(ZeroErrorsTest, StartupProblemsAreErrorsOnEveryRank) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-startup");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const int odd = size - 1;  // the rank whose arguments differ
    const std::string oddRank = "rank " + std::to_string(odd);
    auto attempt = [&](ZeroModel& m, std::vector<layers::Parameter> params, ZeroOptions opts,
                       const std::vector<std::string>& parts, const std::string& what) {
      (void)m;
      expectThrowWith<InvalidArgument>([&] { ShardedOptimizer opt(params, pg, opts); }, parts,
                                       what);
    };
    ZeroOptions base;
    base.optimizer = referenceOptimizers()[0];

    {  // A double parameter on the odd rank.
      ZeroModel m(kNumels, rank);
      std::vector<double> wide(11, 0.0);
      auto params = m.parameters();
      if (rank == odd) params[1].data = tensorOf(wide.data(), wide.size());
      attempt(m, params, base, {oddRank, "parameter 1", "double", "fp32"}, "non-fp32 parameter");
    }
    {  // A grad that does not match its data.
      ZeroModel m(kNumels, rank);
      auto params = m.parameters();
      if (rank == odd) params[3].grad.numel = 8;
      attempt(m, params, base, {oddRank, "parameter 3", "grad has 8 elements"}, "grad numel");
    }
    if (size > 1) {
      {  // A numel that differs on the odd rank.
        std::vector<size_t> numels = kNumels;
        if (rank == odd) numels[2] = 5;
        ZeroModel m(numels, rank);
        attempt(m, m.parameters(), base,
                {"parameter 2 ('p2') differs across ranks", oddRank + " has 5 elements",
                 "has 4 elements"},
                "numel mismatch");
      }
      {  // One parameter more on the odd rank.
        std::vector<size_t> numels = kNumels;
        if (rank == odd) numels.push_back(3);
        ZeroModel m(numels, rank);
        attempt(m, m.parameters(), base, {oddRank + " has 5 parameters", "parameter 4"},
                "parameter count");
      }
      {  // Another learning rate, another grad-reduction mode.
        ZeroModel m(kNumels, rank);
        ZeroOptions lr = base;
        if (rank == odd) lr.optimizer.lr *= 2;
        attempt(m, m.parameters(), lr, {"optimizer options differ", oddRank}, "options");
        ZeroOptions mode = base;
        if (rank == odd) mode.gradReduction = Mode::kReduceToOwner;
        attempt(m, m.parameters(), mode, {"gradReduction differs", oddRank, "reduce_to_owner"},
                "mode");
        ZeroOptions cap = base;
        cap.gradReduction = Mode::kReduceToOwner;
        if (rank == odd) cap.bucketCapBytes = 128;
        attempt(m, m.parameters(), cap, {"bucketCapBytes differs", oddRank + " has 128"}, "cap");
        ZeroOptions rounds = base;  // reduce-scatter buckets and rounds follow from the cap too
        rounds.gradReduction = Mode::kReduceScatter;
        if (rank == odd) rounds.bucketCapBytes = 256;
        attempt(m, m.parameters(), rounds, {"bucketCapBytes differs", oddRank + " has 256"},
                "rounds");
        ZeroOptions groups = base;
        if (rank == odd) groups.paramGroups = {{{1}, 0.5, 0.0}};
        attempt(m, m.parameters(), groups, {"paramGroups differs", oddRank}, "groups");
        ZeroOptions clip = base;
        if (rank == odd) clip.clip = {1.0, INFINITY};
        attempt(m, m.parameters(), clip, {"clip.maxNorm differs", oddRank + " has 1"}, "clip");
      }
    }
    {  // Invalid options everywhere.
      ZeroModel m(kNumels, rank);
      ZeroOptions bad = base;
      bad.optimizer.lr = -1;
      attempt(m, m.parameters(), bad, {"lr"}, "negative lr");
      ZeroOptions cap = base;
      cap.gradReduction = Mode::kReduceToOwner;
      cap.bucketCapBytes = 0;
      attempt(m, m.parameters(), cap, {"bucketCapBytes"}, "zero cap");
      ZeroOptions twice = base;
      twice.paramGroups = {{{1, 2}, 0.5, 0.0}, {{2}, 0.1, 0.0}};
      attempt(m, m.parameters(), twice, {"parameter 2 is in parameter groups 0 and 1"},
              "duplicate group member");
      ZeroOptions norm = base;
      norm.clip = {1.0, 0.0};
      attempt(m, m.parameters(), norm, {"gradNormType must be > 0"}, "norm type 0");
    }
    EXPECT_THROW(ShardedOptimizer({}, nullptr), InvalidArgument);

    // The group is still in step: a good model works and matches the reference.
    ZeroModel m(kNumels, rank);
    ShardedOptimizer opt(m.parameters(), pg, base);
    ReferenceOptimizer ref(base.optimizer, kNumels);
    m.produceGrads(rank, 0);
    opt.step();
    ref.step(size, 0);
    ref.expectParamsEqual(m, "after the start-up errors");
    pg->barrier()->wait();
  });
}

TEST_P(ZeroErrorsTest, MisuseIsAnErrorThatLeavesTheOptimizerUsable) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-misuse");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      ZeroModel m(kNumels, rank);
      ZeroOptions opts;
      opts.optimizer = referenceOptimizers()[2];
      opts.gradReduction = mode;
      ShardedOptimizer opt(m.parameters(), pg, opts);
      ReferenceOptimizer ref(opts.optimizer, kNumels);

      m.produceGrads(rank, 0);
      opt.markReady(3);
      expectThrowWith<InvalidArgument>([&] { opt.markReady(3); },
                                       {"parameter 3 ('p3')", "marked ready twice", "step 1"},
                                       "markReady twice");
      expectThrowWith<InvalidArgument>([&] { opt.markReady(4); },
                                       {"parameter index 4 out of range", "4 parameters"},
                                       "markReady out of range");
      // A gradient given with markReady that does not fit its parameter; the parameter stays
      // unmarked (step() reads its grad tensor).
      std::vector<float> wrong(kNumels[1] + 1, 0.0f);
      expectThrowWith<InvalidArgument>(
          [&] { opt.markReady(1, tensorOf(wrong.data(), wrong.size())); },
          {"parameter 1 ('p1')", std::to_string(wrong.size()) + " elements of float on cpu",
           "the parameter has " + std::to_string(kNumels[1]) + " elements of float"},
          "markReady with a gradient of another size");
      std::vector<double> doubles(kNumels[1], 0.0);
      expectThrowWith<InvalidArgument>(
          [&] { opt.markReady(1, tensorOf(doubles.data(), doubles.size())); },
          {"parameter 1 ('p1')", "elements of double"}, "markReady with a float64 gradient");
      expectThrowWith<InvalidArgument>([&] { opt.ownerOf(9); }, {"index 9 out of range"},
                                       "ownerOf");
      expectThrowWith<InvalidArgument>([&] { opt.shardOf(size); }, {"out of range"}, "shardOf");
      opt.step();
      ref.step(size, 0);
      ref.expectParamsEqual(m, "after markReady misuse");

      for (int bad : {-1, size}) {
        expectThrowWith<InvalidArgument>(
            [&] { opt.consolidateState(bad); },
            {"dstRank " + std::to_string(bad) + " out of range [0, " + std::to_string(size)},
            "consolidateState");
      }
      const optim::OptimizerState good = ref.state();
      optim::OptimizerState numel = good;
      numel.slots[2][0].push_back(0.0f);
      numel.slots[2][1].push_back(0.0f);
      expectThrowWith<InvalidArgument>(
          [&] { opt.loadState(numel); },
          {"loadState", "parameter 2 ('p2') has 4 elements", "'exp_avg' in the state has 5"},
          "loadState numel");
      optim::OptimizerState count = good;
      count.slots.pop_back();
      expectThrowWith<InvalidArgument>([&] { opt.loadState(count); },
                                       {"the state has 3 parameters", "has 4"}, "loadState count");
      optim::OptimizerState other = good;
      other.options.beta2 = 0.99;
      expectThrowWith<InvalidArgument>([&] { opt.loadState(other); }, {"(beta2 differs)"},
                                       "loadState options");
      optim::OptimizerState empty = good;
      empty.slots.clear();
      expectThrowWith<InvalidArgument>([&] { opt.loadState(empty); },
                                       {"holds no parameters", "dstRank"}, "loadState empty");

      // Still usable, and its state untouched by the failed loads.
      m.produceGrads(rank, 1);
      opt.step();
      ref.step(size, 1);
      ref.expectParamsEqual(m, "after loadState misuse");
      const optim::OptimizerState full = opt.consolidateState(0);
      if (rank == 0) expectStateEqual(full, ref.state(), "state after misuse");
    }
    pg->barrier()->wait();
  });
}

// Rank 0 steps alone with a short timeout: its collective times out, and from then on the
// optimizer refuses use, quoting the failure. The others step late and time out in turn (rank 0
// never issues the allgather). Nothing hangs.
// Parameters given without grad tensors (a framework that keeps no gradient array): each must be
// marked with its gradient every step; a step with one left unmarked is an error before any
// collective (every rank makes the same mistake here), and the optimizer stays usable.
TEST_P(ZeroErrorsTest, ParametersWithoutGradTensorsMustBeGivenTheirGradients) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-nograd");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      ZeroModel m(kNumels, rank);
      std::vector<layers::Parameter> params = m.parameters();
      for (layers::Parameter& p : params) p.grad = Tensor();
      ZeroOptions opts;
      opts.optimizer = referenceOptimizers()[2];
      opts.gradReduction = mode;
      ShardedOptimizer opt(params, pg, opts);
      ReferenceOptimizer ref(opts.optimizer, kNumels);
      m.produceGrads(rank, 0);
      for (size_t i = 0; i < kNumels.size(); ++i) {
        if (i != 2) opt.markReady(i, tensorOf(m.grad(i).data(), m.grad(i).size()));
      }
      expectThrowWith<InvalidArgument>(
          [&] { opt.step(); },
          {"parameter 2 ('p2') has no grad tensor", "markReady(2, grad)", "step 1"},
          "step with a parameter never given its gradient");
      opt.markReady(2, tensorOf(m.grad(2).data(), m.grad(2).size()));
      opt.step();
      ref.step(size, 0);
      ref.expectParamsEqual(m, "parameters without grad tensors");
    }
    pg->barrier()->wait();
  });
}

TEST_P(ZeroErrorsTest, AFailedCollectiveBreaksTheOptimizer) {
  if (ws() < 2) GTEST_SKIP() << "needs two ranks";
#if defined(__SANITIZE_THREAD__)
  // libgloo (Debian 0.5.0, not instrumented) destroys a timed-out op's UnboundBuffer while its
  // tcp I/O thread may still signal the buffer's condition variable (UnboundBuffer::
  // handleRecvCompletion vs ~UnboundBuffer): TSan reports that race inside libgloo.
  if (p().backend == "gloo") GTEST_SKIP() << "libgloo's timeout path races under TSan";
#endif
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-timeout");
  expectAllRanksOk(ws(), [&](int rank, int /*size*/) {
    auto pg = makeGroup(bp, path, rank, ws());
    ZeroModel m(kNumels, rank);
    ZeroOptions opts;
    opts.optimizer = referenceOptimizers()[0];
    opts.timeout = std::chrono::milliseconds(300);
    ShardedOptimizer opt(m.parameters(), pg, opts);
    m.produceGrads(rank, 0);
    if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    EXPECT_THROW(opt.step(), Error);
    expectThrowWith<Error>([&] { opt.step(); }, {"unusable after an earlier failure", "step 1"},
                           "step after a failure");
    expectThrowWith<Error>([&] { opt.markReady(0); }, {"unusable"}, "markReady after a failure");
    expectThrowWith<Error>([&] { opt.consolidateState(0); }, {"unusable"},
                           "consolidateState after a failure");
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ZeroErrorsTest,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})), zeroCaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZeroErrorsTest);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
