// train_mlp --trace: the file is a Chrome trace (JSON, "traceEvents") holding, for every rank,
// every step, each layer's forward and backward compute inside its step, and each collective of
// the mode (DDP's bucket allreduces; ZeRO-3's per-layer gathers and reduce-scatters) from launch
// to completion, launched inside its step; the per-rank part files are merged and removed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/examples/train_mlp_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

struct TraceCase {
  std::string mode;
  int commPerStep;  // collectives per step with the test model (3 layers)
};

void PrintTo(const TraceCase& c, std::ostream* os) {
  *os << c.mode;
}

class TrainMlpTrace : public ::testing::TestWithParam<TraceCase> {};

TEST_P(TrainMlpTrace, EveryRankStepLayerAndCollective) {
  const TraceCase c = GetParam();
  const std::string path = uniqueTempPath("train-mlp-trace") + ".json";
  constexpr int kSteps = 3;
  constexpr int kLayers = 3;
  const Training t =
      runTraining(2, {"--mode", c.mode, "--steps", std::to_string(kSteps), "--global-batch", "32",
                      "--bucket-cap-kb", "4", "--first-bucket-kb", "1", "--trace", path});
  ASSERT_TRUE(t.ok()) << t.describe();
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no trace at " << path << "\n" << t.describe();
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(std::filesystem::exists(path + ".rank" + std::to_string(r))) << "part not merged";
  }
  // Per rank: the steps' windows, then everything inside them.
  std::map<int, std::map<std::string, std::pair<double, double>>> steps;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("cat", "") == "step") {
      steps[e.at("pid").get<int>()][e.at("name").get<std::string>()] = {
          e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()};
    }
  }
  ASSERT_EQ(steps.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(steps[r].size(), static_cast<size_t>(kSteps)) << "rank " << r;
    auto within = [&](double ts) {
      for (const auto& [name, w] : steps[r]) {
        if (ts >= w.first && ts <= w.second) return true;
      }
      return false;
    };
    int compute = 0;
    int comm = 0;
    for (const auto& e : doc.at("traceEvents")) {
      if (e.at("pid").get<int>() != r || e.at("ph") != "X") continue;
      const std::string cat = e.value("cat", "");
      const double ts = e.at("ts").get<double>();
      const std::string what = "rank " + std::to_string(r) + " " + e.at("name").get<std::string>();
      if (cat == "compute") {
        ++compute;
        EXPECT_TRUE(within(ts) && within(ts + e.at("dur").get<double>())) << what;
      } else if (cat == "comm") {
        ++comm;
        EXPECT_TRUE(within(ts)) << what << ": launched outside every step";
        EXPECT_GT(e.at("args").at("bytes").get<int64_t>(), 0) << what;
      }
    }
    EXPECT_EQ(compute, kSteps * 2 * kLayers) << "rank " << r;  // forward and backward per layer
    if (c.commPerStep > 0) {
      EXPECT_EQ(comm, kSteps * c.commPerStep) << "rank " << r;
    } else {
      EXPECT_GE(comm, kSteps * 2) << "rank " << r;  // several buckets per step
    }
  }
}

// ddp: the bucket count depends on the Reducer's rebuild (>= 2 per step); zero3: per step 2L - 1
// gathers (the last layer is kept from forward to backward) and L reduce-scatters.
INSTANTIATE_TEST_SUITE_P(, TrainMlpTrace,
                         ::testing::Values(TraceCase{"ddp", 0}, TraceCase{"zero3", 2 * 3 - 1 + 3}),
                         [](const ::testing::TestParamInfo<TraceCase>& info) {
                           return info.param.mode;
                         });

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
