// train_mlp, end to end: the same seed and global batch give the same loss curve in every mode
// (local, ddp, zero with both gradient reductions; zero frees each gradient when the optimizer
// releases it, never holding all of them at once) and at every world size (1, 2, 4), on every
// CPU backend built here, for SGD with momentum and AdamW, with and without --sync-bn (a
// SyncBatchNorm whose statistics span the global batch, so each rank's quarter of the batch is
// normalized as the one process normalizes the whole). The reference is the one-process run,
// computed in the test; every logged step's loss and the final loss must agree with it.
//
// Tolerance: 1e-5 relative. The modes do the same arithmetic except for the order of the gradient
// sums (per rank, then across ranks by the backend's algorithm), so they differ by fp32 rounding
// (unit roundoff 6e-8). Measured here, the worst step of any run differs from the one-process run
// by 1.5e-8 relative (SGD and AdamW, verbs and gloo, 20 steps; the test prints it): the tolerance
// leaves a factor of ~600 for other machines, algorithms and longer runs. A real fault moves the
// loss by far more: the sensitivity test below shows that a 0.2% change of the learning rate
// already exceeds the tolerance tenfold, and a sample read twice, a missing 1/world or a stale
// gradient each change the loss at the first step they touch by more than that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "tests/examples/train_mlp_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

constexpr double kRelTol = 1e-5;
constexpr uint64_t kSteps = 20;

std::vector<std::string> commonArgs(const std::string& optimizer) {
  // Small buckets, so that the Reducer has several and ZeRO's reduce-to-owner several per owner.
  return {"--steps",
          std::to_string(kSteps),
          "--seed",
          "7",
          "--global-batch",
          "32",
          "--optimizer",
          optimizer,
          "--bucket-cap-kb",
          "4",
          "--first-bucket-kb",
          "1"};
}

// Every step logged by `ref` is logged by `got` with a loss within kRelTol; same for the final
// loss. Returns the largest relative difference seen.
double expectSameCurve(const Training& ref, const Training& got, const std::string& what) {
  double worst = 0;
  EXPECT_EQ(got.loss.size(), ref.loss.size()) << what << "\n" << got.describe();
  for (const auto& [step, text] : ref.loss) {
    if (got.loss.count(step) == 0) {
      ADD_FAILURE() << what << ": no loss at step " << step << "\n" << got.describe();
      return worst;
    }
    const double want = ref.lossAt(step);
    const double have = got.lossAt(step);
    const double rel = std::abs(have - want) / std::abs(want);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, kRelTol) << what << ": step " << step << " loss " << have << ", one process "
                            << want;
  }
  const double rel =
      std::abs(got.finalLossValue() - ref.finalLossValue()) / std::abs(ref.finalLossValue());
  worst = std::max(worst, rel);
  EXPECT_LE(rel, kRelTol) << what << ": final loss " << got.finalLoss << ", one process "
                          << ref.finalLoss;
  return worst;
}

// "<a> of <b> <what>" in `line`: {a, b}.
std::pair<int, int> countsOf(const std::string& line, const std::string& what) {
  const size_t at = line.find(" " + what);
  if (at == std::string::npos) return {-1, -1};
  const size_t of = line.rfind(" of ", at);
  const size_t start = line.rfind(' ', of - 1);
  return {std::atoi(line.c_str() + start + 1), std::atoi(line.c_str() + of + 4)};
}

struct EquivalenceCase {
  std::string backend;
  std::string optimizer;
  bool syncBn = false;  // --sync-bn: batch norm statistics over the whole global batch
};

// gtest (and ctest's test names) print the case with this instead of its bytes.
void PrintTo(const EquivalenceCase& c, std::ostream* os) {
  *os << c.backend << " " << c.optimizer << (c.syncBn ? " sync-bn" : "");
}

class TrainMlpEquivalence : public ::testing::TestWithParam<EquivalenceCase> {};

TEST_P(TrainMlpEquivalence, EveryModeAndWorldSizeFollowsTheOneProcessCurve) {
  const auto& [backend, optimizer, syncBn] = GetParam();
  if (!isBackendRegistered(backend)) GTEST_SKIP() << backend << " is not built here";
  auto common = commonArgs(optimizer);
  if (syncBn) common.push_back("--sync-bn");
  const Training local = runTraining(1, concat(common, {"--mode", "local"}));
  ASSERT_TRUE(local.ok()) << local.describe();
  ASSERT_EQ(local.loss.size(), kSteps) << local.describe();
  // It learns: the held-out loss of the final model is well below the first batch's loss.
  EXPECT_LT(local.finalLossValue(), local.lossAt(1) - 0.1) << local.describe();

  struct Run {
    std::string mode;
    int ranks;
    std::string gradReduction;
  };
  const std::vector<Run> runs = {{"ddp", 1, ""},
                                 {"ddp", 2, ""},
                                 {"ddp", 4, ""},
                                 {"zero", 2, "reduce_scatter"},
                                 {"zero", 4, "reduce_scatter"},
                                 {"zero", 2, "reduce_to_owner"},
                                 {"zero", 4, "reduce_to_owner"},
                                 {"zero3", 2, ""},
                                 {"zero3", 4, ""},
                                 {"zero3", 4, "no_prefetch"}};
  double worst = 0;
  std::string zeroOn2;  // final params of ZeRO-2 (reduce-scatter) on 2 ranks
  for (const Run& r : runs) {
    std::vector<std::string> args = concat(common, {"--mode", r.mode, "--backend", backend});
    if (r.mode == "zero") args = concat(args, {"--grad-reduction", r.gradReduction});
    if (r.gradReduction == "no_prefetch") args.push_back("--no-prefetch");
    const std::string what =
        r.mode + " " + r.gradReduction + " on " + std::to_string(r.ranks) + " ranks, " + backend;
    const Training t = runTraining(r.ranks, args);
    ASSERT_TRUE(t.ok()) << what << "\n" << t.describe();
    worst = std::max(worst, expectSameCurve(local, t, what));
    if (r.mode == "ddp") {
      // Several buckets, each launched from markReady during backward (never from finalize).
      const std::string buckets = t.line("ddp: ");
      EXPECT_GE(std::atoi(buckets.c_str() + 5), 3) << what << ": " << buckets;
      const auto [early, launched] =
          countsOf(t.line("launched during backward"), "bucket allreduces");
      EXPECT_EQ(early, launched) << what << "\n" << t.describe();
      EXPECT_EQ(launched, std::atoi(buckets.c_str() + 5) * static_cast<int>(kSteps)) << what;
    }
    if (r.mode == "zero") {
      // Both reductions launch every bucket from markReady, and the model's gradients are freed
      // as the optimizer releases them: no rank ever holds all of them (fc1.weight alone is 74%
      // of this model, and a layer's gradients are allocated together, so that is the bound).
      const auto [early, launched] =
          countsOf(t.line("launched during backward"), "gradient collectives");
      EXPECT_GT(launched, 0) << what << "\n" << t.describe();
      EXPECT_EQ(early, launched) << what << "\n" << t.describe();
      // "zero: gradients freed as the optimizer released them: at most <x> KiB of the model's
      // <y> KiB held at once on rank <r>"
      const std::string freed = t.line("gradients freed");
      const double held = std::atof(freed.c_str() + freed.find("at most") + 7);
      const double model = std::atof(freed.c_str() + freed.find("model's") + 7);
      EXPECT_GT(held, 0) << what << ": " << freed;
      EXPECT_LT(held, model) << what << ": " << freed;
    }
    if (r.mode == "zero" && r.ranks == 2 && r.gradReduction == "reduce_scatter") {
      zeroOn2 = t.finalParams;
    }
    if (r.mode == "zero3") {
      // Two ranks' sums are order-free, so ZeRO-3 must end bit-identical to ZeRO-2.
      if (r.ranks == 2) {
        EXPECT_EQ(t.finalParams, zeroOn2) << what;
      }
      // Every layer gathered for forward and (but the last) for backward; all but the first of
      // each pass prefetched, unless told not to.
      // "zero3: <gathers> layer gathers, <prefetched> of them prefetched; ..."
      const std::string line = t.line("layer gathers");
      const int gathers = std::atoi(line.c_str() + line.find(':') + 1);
      const int prefetched = std::atoi(line.c_str() + line.find(',') + 1);
      const int perStep = gathers / static_cast<int>(kSteps);
      EXPECT_EQ(gathers % static_cast<int>(kSteps), 0) << what << ": " << line;
      EXPECT_GE(perStep, 3) << what << ": " << line;  // 2L - 1 per step, L >= 2
      EXPECT_EQ(prefetched, r.gradReduction == "no_prefetch" ? 0 : gathers - int(kSteps))
          << what << ": " << line;
    }
    if (r.mode == "ddp" && r.ranks == 1) {
      // One rank: the allreduce is the identity and the division by 1 exact, so the run is the
      // one-process run bit for bit.
      EXPECT_EQ(t.finalParams, local.finalParams) << what;
      EXPECT_EQ(t.loss, local.loss) << what;
    }
  }
  std::printf("[ worst relative loss difference over every run and step: %.3g ]\n", worst);
}

INSTANTIATE_TEST_SUITE_P(, TrainMlpEquivalence,
                         ::testing::Values(EquivalenceCase{"verbs", "sgd"},
                                           EquivalenceCase{"verbs", "adamw"},
                                           EquivalenceCase{"gloo", "sgd"},
                                           EquivalenceCase{"gloo", "adamw"},
                                           EquivalenceCase{"verbs", "sgd", true},
                                           EquivalenceCase{"gloo", "adamw", true}),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& info) {
                           return info.param.backend + "_" + info.param.optimizer +
                                  (info.param.syncBn ? "_sync_bn" : "");
                         });

// The tolerance above can fail: a 0.2% larger learning rate is outside it within the run.
TEST(TrainMlpEquivalenceSensitivity, SmallChangeBreaksTheTolerance) {
  const auto common = commonArgs("sgd");
  const Training a = runTraining(1, concat(common, {"--mode", "local", "--lr", "0.05"}));
  const Training b = runTraining(1, concat(common, {"--mode", "local", "--lr", "0.0501"}));
  ASSERT_TRUE(a.ok()) << a.describe();
  ASSERT_TRUE(b.ok()) << b.describe();
  double worst = 0;
  for (uint64_t step = 1; step <= kSteps; ++step) {
    worst = std::max(worst, std::abs(a.lossAt(step) - b.lossAt(step)) / a.lossAt(step));
  }
  EXPECT_GT(worst, 10 * kRelTol);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
