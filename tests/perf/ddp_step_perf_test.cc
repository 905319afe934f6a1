// ddp_step_perf: its flags and table as unit tests, and the real binary run tiny as forked ranks
// over every CPU backend built here. What is checked is the output (header, one row per mode in
// order, the columns each mode must and must not have, the optimizer-state bytes against values
// computed here, each mode's measured memory against what its layer must hold, the JSON file) and
// that every mode's results check clean, or catch the one wrong element C10D_PERF_INJECT_ERROR
// plants; never the timings themselves.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "perf/common/ddp_step.h"
#include "tests/perf/perf_process.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

ParseResult parse(std::vector<std::string> args, DdpStepOptions* o) {
  args.insert(args.begin(), "ddp_step_perf");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseDdpStepOptions(static_cast<int>(args.size()), argv.data(), o);
}

// The error message of a parse that must fail.
std::string parseError(const std::vector<std::string>& args) {
  DdpStepOptions o;
  const ParseResult r = parse(args, &o);
  EXPECT_EQ(r.action, ParseResult::kError) << testing::PrintToString(args);
  return r.message;
}

TEST(DdpStepOptions, DefaultsGiveA64MiBModelOf24Layers) {
  DdpStepOptions o;
  ASSERT_EQ(parse({}, &o).action, ParseResult::kRun);
  EXPECT_EQ(o.layers, 24u);
  EXPECT_EQ(o.paramsPerLayer, (size_t{64} << 20) / 24 / 4);
  EXPECT_EQ(o.modelBytes, o.layers * o.paramsPerLayer * 4);
  EXPECT_EQ(o.bucketCapBytes, size_t{25} << 20);
  EXPECT_EQ(o.firstBucketBytes, size_t{1} << 20);
  EXPECT_EQ(o.modes, allStepModes());
  EXPECT_EQ(o.optimizer, optim::Algorithm::kAdam);
  EXPECT_LT(o.computeUsPerLayer, 0);  // calibrated
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 3);
  EXPECT_EQ(o.check, 1);
}

TEST(DdpStepOptions, AnyTwoOfSizeLayersAndLayerSizeGiveTheThird) {
  DdpStepOptions a;
  ASSERT_EQ(parse({"--params-per-layer", "1K", "--layers", "4"}, &a).action, ParseResult::kRun);
  EXPECT_EQ(a.modelBytes, 4u * 1024 * 4);
  DdpStepOptions b;
  ASSERT_EQ(parse({"--model-bytes", "1M", "--params-per-layer", "1K"}, &b).action,
            ParseResult::kRun);
  EXPECT_EQ(b.layers, 256u);
  EXPECT_EQ(b.modelBytes, size_t{1} << 20);
  DdpStepOptions c;  // rounded down to whole layers of whole parameters
  ASSERT_EQ(parse({"--model-bytes", "1M", "--layers", "3"}, &c).action, ParseResult::kRun);
  EXPECT_EQ(c.paramsPerLayer, (size_t{1} << 20) / 3 / 4);
  EXPECT_EQ(c.modelBytes, 3 * c.paramsPerLayer * 4);
  DdpStepOptions d;  // one alone: the default layer count
  ASSERT_EQ(parse({"--params-per-layer", "100"}, &d).action, ParseResult::kRun);
  EXPECT_EQ(d.layers, 24u);
  EXPECT_EQ(d.modelBytes, 24u * 100 * 4);
  DdpStepOptions e;  // all three, agreeing
  ASSERT_EQ(
      parse({"--model-bytes", "4000", "--layers", "10", "--params-per-layer", "100"}, &e).action,
      ParseResult::kRun);
  EXPECT_EQ(e.modelBytes, 4000u);
}

TEST(DdpStepOptions, BadValuesNameTheFlag) {
  EXPECT_NE(parseError({"--model-bytes", "4000", "--layers", "10", "--params-per-layer", "99"})
                .find("disagrees"),
            std::string::npos);
  EXPECT_NE(parseError({"--model-bytes", "8", "--layers", "4"}).find("too small for 4 layers"),
            std::string::npos);
  EXPECT_NE(parseError({"--model-bytes", "8", "--params-per-layer", "4"}).find("holds no layer"),
            std::string::npos);
  EXPECT_NE(parseError({"--model-bytes", "lots"}).find("--model-bytes"), std::string::npos);
  EXPECT_NE(parseError({"--layers", "0"}).find("--layers"), std::string::npos);
  EXPECT_NE(parseError({"--modes", "ddp,nope"}).find("invalid mode 'nope'"), std::string::npos);
  EXPECT_NE(parseError({"--modes", "ddp,ddp"}).find("given twice"), std::string::npos);
  EXPECT_NE(parseError({"--modes", "zero,zero2"}).find("'zero2' given twice"), std::string::npos);
  EXPECT_NE(parseError({"--bucket-cap-mb", "0"}).find("--bucket-cap-mb"), std::string::npos);
  EXPECT_NE(parseError({"--first-bucket-mb", "-1"}).find("--first-bucket-mb"), std::string::npos);
  EXPECT_NE(parseError({"--compute-us-per-layer", "x"}).find("--compute-us-per-layer"),
            std::string::npos);
  EXPECT_NE(parseError({"--compute-ratio", "-2"}).find("--compute-ratio"), std::string::npos);
  EXPECT_NE(parseError({"--optimizer", "rmsprop"}).find("--optimizer"), std::string::npos);
  EXPECT_NE(parseError({"-n", "0"}).find("iters (-n)"), std::string::npos);
  EXPECT_NE(parseError({"-w"}).find("needs a value"), std::string::npos);
  EXPECT_NE(parseError({"--bogus"}).find("invalid option '--bogus'"), std::string::npos);
  EXPECT_NE(parseError({"extra"}).find("unexpected argument 'extra'"), std::string::npos);
}

TEST(DdpStepOptions, ModesBucketsAndOptimizer) {
  DdpStepOptions o;
  ASSERT_EQ(parse({"--modes", "zero-owner,none,ddp+opt,zero2,zero3", "--bucket-cap-mb", "0.5",
                   "--first-bucket-mb", "2", "--optimizer", "sgd", "--json", "/tmp/x.json",
                   "--compute-us-per-layer", "12.5", "-c", "0", "-T", "30"},
                  &o)
                .action,
            ParseResult::kRun);
  EXPECT_EQ(o.modes, (std::vector<StepMode>{StepMode::kZeroOwner, StepMode::kNone,
                                            StepMode::kDdpOpt, StepMode::kZero, StepMode::kZero3}));
  EXPECT_EQ(o.bucketCapBytes, size_t{1} << 19);
  EXPECT_EQ(o.firstBucketBytes, size_t{2} << 20);
  EXPECT_EQ(o.optimizer, optim::Algorithm::kSgd);
  EXPECT_EQ(o.jsonPath, "/tmp/x.json");
  EXPECT_DOUBLE_EQ(o.computeUsPerLayer, 12.5);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.timeoutSec, 30);
  DdpStepOptions h;
  EXPECT_EQ(parse({"--help"}, &h).action, ParseResult::kHelp);
}

TEST(DdpStepTable, RowsParseBack) {
  StepRow a;
  a.mode = "ddp-view";
  a.stepMinMs = 1.25;
  a.stepMedMs = 12345.5;
  a.exposedMs = -0.5;
  a.commMs = 3.125;
  a.overlapPct = 87.5;
  a.busBw = 4.5;
  a.peakBytes = 1310720;  // 1.25 MiB
  a.liveBytes = 524288;
  a.wrong = 0;
  const std::string line = stepTableRow(a);
  EXPECT_EQ(line,
            "  ddp-view      1.250  12345.500     -0.500      3.125       87.5       4.50       "
            "1.25       0.50        0\n");
  StepRow b;
  ASSERT_TRUE(parseStepTableRow(line, &b)) << line;
  EXPECT_EQ(b.mode, a.mode);
  EXPECT_DOUBLE_EQ(b.stepMinMs, a.stepMinMs);
  EXPECT_DOUBLE_EQ(b.stepMedMs, a.stepMedMs);
  EXPECT_DOUBLE_EQ(b.exposedMs, a.exposedMs);
  EXPECT_DOUBLE_EQ(b.commMs, a.commMs);
  EXPECT_DOUBLE_EQ(b.overlapPct, a.overlapPct);
  EXPECT_DOUBLE_EQ(b.busBw, a.busBw);
  EXPECT_EQ(b.peakBytes, a.peakBytes);
  EXPECT_EQ(b.liveBytes, a.liveBytes);
  EXPECT_EQ(b.wrong, 0);

  StepRow n;  // N/A columns; exposed N/A is NaN
  n.mode = "zero-owner";
  n.exposedMs = std::nan("");
  const std::string na = stepTableRow(n);
  EXPECT_EQ(na,
            "zero-owner      0.000      0.000        N/A        N/A        N/A        N/A        "
            "N/A        N/A      N/A\n");
  StepRow m;
  ASSERT_TRUE(parseStepTableRow(na, &m));
  EXPECT_TRUE(std::isnan(m.exposedMs));
  EXPECT_LT(m.commMs, 0);
  EXPECT_LT(m.overlapPct, 0);
  EXPECT_LT(m.busBw, 0);
  EXPECT_LT(m.peakBytes, 0);
  EXPECT_LT(m.liveBytes, 0);
  EXPECT_EQ(m.wrong, -1);

  EXPECT_FALSE(parseStepTableRow("# comment", &m));
  EXPECT_FALSE(parseStepTableRow("   bogus 1 2 3 4 5 6 7 8 9", &m));
  EXPECT_FALSE(parseStepTableRow("   ddp 1 2 3 4 5 6 7 8", &m));
  EXPECT_FALSE(parseStepTableRow("   ddp 1 2 x 4 5 6 7 8 9", &m));
}

// ---- the binary ----

std::vector<StepRow> rowsOf(const std::string& out) {
  std::vector<StepRow> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    StepRow r;
    if (parseStepTableRow(line, &r)) rows.push_back(r);
  }
  return rows;
}

bool has(const std::string& out, const std::string& what) {
  return out.find(what) != std::string::npos;
}

// 8 layers of 8192 fp32 parameters (32 KiB): a 32 KiB first bucket and 64 KiB buckets give the
// Reducer several buckets to overlap; a fixed compute per layer skips the calibration allreduce.
const std::vector<std::string> kTiny{"--model-bytes",
                                     "256K",
                                     "--layers",
                                     "8",
                                     "--bucket-cap-mb",
                                     "0.0625",
                                     "--first-bucket-mb",
                                     "0.03125",
                                     "--compute-us-per-layer",
                                     "20",
                                     "-n",
                                     "2",
                                     "-w",
                                     "1"};
constexpr size_t kPerLayer = 8192;
constexpr size_t kModelBytes = 8 * kPerLayer * 4;

std::vector<std::string> tinyArgs(const std::string& backend,
                                  const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--backend", backend});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

struct Case {
  const char* backend;
  int ranks;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " x" << c.ranks;
}

class DdpStepRun : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!isBackendRegistered(GetParam().backend)) {
      GTEST_SKIP() << "backend " << GetParam().backend << " is not built";
    }
  }
};

TEST_P(DdpStepRun, EveryModeReportsAndChecksClean) {
  const std::string backend = GetParam().backend;
  const int n = GetParam().ranks;
  const std::string json = test::uniqueTempPath("ddpstep") + ".json";
  RunResult r = runPerf("ddp_step_perf", n, tinyArgs(backend, {"-J", json}));
  ASSERT_TRUE(r.allOk()) << r.out0 << r.err;
  const std::string& out = r.out0;

  EXPECT_EQ(out.rfind("# DDP step test starting: ddp_step_perf\n", 0), 0u) << out;
  EXPECT_TRUE(has(out, " backend " + backend + " device cpu world size " + std::to_string(n) +
                           " launcher env\n"))
      << out;
  EXPECT_TRUE(has(out,
                  "# model 0.25 MiB fp32: 8 layers x 8192 parameters (one tensor per layer); "
                  "adam(lr=0.01"))
      << out;
  const std::string described = backend == "verbs" ? "verbs/shm" : backend;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_TRUE(has(out, "#  Rank  " + std::to_string(rank) + " Group  0 Pid ")) << out;
  }
  EXPECT_TRUE(has(out, "device  0 [cpu] " + described + "\n")) << out;
  EXPECT_TRUE(has(out, "# backward: ")) << out;
  EXPECT_TRUE(has(out, "(target 20.0 us per layer, as given (--compute-us-per-layer))")) << out;
  EXPECT_TRUE(has(out, "# reducer: bucket cap 0.06 MiB, first bucket 0.03 MiB -> ")) << out;
  EXPECT_TRUE(has(out, stepTableHeader())) << out;
  EXPECT_TRUE(has(out, "# Out of bounds values : 0 OK\n")) << out;
  EXPECT_TRUE(has(out, "# DDP step test concluded: ddp_step_perf\n")) << out;

  // Adam: 2 slots x 4 bytes per parameter in full on every DDP rank; ZeRO's greedy partition of 8
  // equal layers gives ceil(8/n) and floor(8/n) layers to the largest and smallest shards.
  const size_t full = 2 * 4 * 8 * kPerLayer;
  const size_t largest = 2 * 4 * ((8 + n - 1) / n) * kPerLayer;
  const size_t smallest = 2 * 4 * (8 / n) * kPerLayer;
  auto mib = [](size_t b) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(buf);
  };
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.2f", static_cast<double>(full) / largest);
  EXPECT_TRUE(has(out, "# optimizer state per rank (adam, 2 slots): ddp " + mib(full) +
                           " (the full state on every rank); zero " + mib(largest) + " largest, " +
                           mib(smallest) + " smallest shard at world size " + std::to_string(n) +
                           " (" + ratio + "x less; full " + mib(full) + ")\n"))
      << out;
  // zero3: every layer split in n chunks of C floats; state and shards are 2 x 8 C floats each.
  const size_t chunk = (kPerLayer + n - 1) / n;
  const size_t local = 8 * chunk * 4;  // bytes of one shard-sized buffer
  EXPECT_TRUE(has(out, "# zero3 per rank: state " + mib(2 * local) +
                           ", parameter + gradient shards " + mib(2 * local) + "\n"))
      << out;
  EXPECT_TRUE(has(out, "# model arrays per rank, not in peak/live: parameters " + mib(kModelBytes) +
                           " + gradients " + mib(kModelBytes) +
                           " (zero3 needs neither; ddp-view's gradients are its buckets)\n"))
      << out;

  const std::vector<StepRow> rows = rowsOf(out);
  ASSERT_EQ(rows.size(), allStepModes().size()) << out;
  for (size_t k = 0; k < rows.size(); ++k) {
    const StepRow& row = rows[k];
    const StepMode mode = allStepModes()[k];
    EXPECT_EQ(row.mode, stepModeName(mode));
    EXPECT_GT(row.stepMinMs, 0) << row.mode;
    EXPECT_LE(row.stepMinMs, row.stepMedMs) << row.mode;
    EXPECT_FALSE(std::isnan(row.exposedMs)) << row.mode;
    EXPECT_GE(row.liveBytes, 0) << row.mode;
    EXPECT_GE(row.peakBytes, row.liveBytes) << row.mode;
    if (mode == StepMode::kNone) {
      EXPECT_EQ(row.exposedMs, 0);
      EXPECT_EQ(row.peakBytes, 0) << "none allocates nothing";
      EXPECT_EQ(row.liveBytes, 0);
      EXPECT_LT(row.commMs, 0) << "none communicates nothing: N/A";
      EXPECT_LT(row.busBw, 0);
      EXPECT_LT(row.overlapPct, 0);
      EXPECT_EQ(row.wrong, -1);
      continue;
    }
    EXPECT_EQ(row.wrong, 0) << row.mode;
    EXPECT_GT(row.commMs, 0) << row.mode << ": its collectives were recorded";
    EXPECT_GE(row.busBw, 0) << row.mode << ": printed to 0.01 GB/s (the JSON's is checked > 0)";
    const bool reducer =
        mode == StepMode::kDdp || mode == StepMode::kDdpView || mode == StepMode::kDdpOpt;
    if (reducer) {
      EXPECT_GE(row.overlapPct, 0) << row.mode;
      EXPECT_LE(row.overlapPct, 100) << row.mode;
    } else {
      EXPECT_LT(row.overlapPct, 0) << row.mode << ": overlap is the Reducer's";
    }
  }

  std::ifstream jf(json);
  ASSERT_TRUE(jf.good()) << json;
  const nlohmann::json doc = nlohmann::json::parse(jf);
  EXPECT_EQ(doc["program"], "ddp_step_perf");
  EXPECT_EQ(doc["backend"], backend);
  EXPECT_EQ(doc["world_size"], n);
  EXPECT_EQ(doc["devices"].size(), static_cast<size_t>(n));
  EXPECT_EQ(doc["config"]["model_bytes"], kModelBytes);
  EXPECT_EQ(doc["config"]["params_per_layer"], kPerLayer);
  EXPECT_EQ(doc["config"]["iterations"], 2);
  EXPECT_TRUE(doc["config"]["flat_allreduce_ms"].is_null());  // not calibrated
  size_t bucketTotal = 0;
  for (const auto& b : doc["config"]["bucket_bytes"]) bucketTotal += b.get<size_t>();
  EXPECT_EQ(bucketTotal, kModelBytes);
  EXPECT_GT(doc["config"]["bucket_bytes"].size(), 2u);
  ASSERT_EQ(doc["results"].size(), rows.size());
  std::vector<int64_t> peak(rows.size()), live(rows.size());  // bytes, exact from the JSON
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& res = doc["results"][k];
    EXPECT_EQ(res["mode"], rows[k].mode);
    EXPECT_NEAR(res["step_ms_median"].get<double>(), rows[k].stepMedMs, 0.0006);
    peak[k] = res["peak_bytes"].get<int64_t>();
    live[k] = res["live_bytes"].get<int64_t>();
    EXPECT_NEAR(static_cast<double>(peak[k]), static_cast<double>(rows[k].peakBytes), 5300);
    EXPECT_NEAR(static_cast<double>(live[k]), static_cast<double>(rows[k].liveBytes), 5300);
    if (k == 0) {
      EXPECT_TRUE(res["nwrong"].is_null());
      EXPECT_TRUE(res["bus_bw"].is_null());
    } else {
      EXPECT_EQ(res["nwrong"], 0);
      EXPECT_GT(res["bus_bw"].get<double>(), 0) << rows[k].mode;
    }
  }
  EXPECT_EQ(doc["optimizer_state"]["ddp_bytes_per_rank"], full);
  EXPECT_EQ(doc["optimizer_state"]["zero_full_bytes"], full);
  EXPECT_EQ(doc["optimizer_state"]["zero_max_bytes_per_rank"], largest);
  EXPECT_EQ(doc["optimizer_state"]["zero_min_bytes_per_rank"], smallest);
  EXPECT_EQ(doc["optimizer_state"]["zero3_state_bytes_per_rank"], 2 * local);
  EXPECT_EQ(doc["optimizer_state"]["zero3_shard_bytes_per_rank"], 2 * local);
  EXPECT_EQ(doc["model_array_bytes"]["parameters"], kModelBytes);
  EXPECT_EQ(doc["model_array_bytes"]["gradients"], kModelBytes);
  EXPECT_EQ(doc["out_of_bounds"], 0);

  // The process's RSS, measured: start-up, the steps and the check, each peak (VmHWM) at least
  // what was sampled in it and at least the model's parameter and gradient arrays, which the
  // process holds throughout; the process's peak the largest; per mode a step's rise.
  EXPECT_TRUE(has(out, "# process memory per rank (RSS, the largest rank's): start-up peak "))
      << out;
  EXPECT_TRUE(has(out, "# a timed step's rise of the RSS peak over the RSS before it")) << out;
  const auto& pm = doc["process_memory"];
  ASSERT_EQ(pm["phases"].size(), 3u) << pm.dump();
  const std::vector<std::string> phaseNames{"start-up", "steps", "check"};
  int64_t largestPeak = 0;
  for (size_t k = 0; k < 3; ++k) {
    const auto& ph = pm["phases"][k];
    EXPECT_EQ(ph["phase"], phaseNames[k]);
    const auto phasePeak = ph["peak_bytes"].get<int64_t>();
    EXPECT_GE(phasePeak, ph["sampled_max_bytes"].get<int64_t>()) << ph.dump();
    EXPECT_GE(phasePeak, 2 * static_cast<int64_t>(kModelBytes)) << ph.dump();
    largestPeak = std::max(largestPeak, phasePeak);
  }
  EXPECT_EQ(pm["process_peak_bytes"].get<int64_t>(), largestPeak);
  for (const auto& res : doc["results"]) {
    EXPECT_TRUE(res["rss_step_rise_bytes"].is_null() || res["rss_step_rise_bytes"] >= 0)
        << res.dump();
  }

  // What each mode's layers must hold (allocations round up to 8-byte words: 1 KiB of slack).
  // The modes in allStepModes() order: none flat ddp ddp-view ddp+opt zero zero-owner zero3.
  const auto model = static_cast<int64_t>(kModelBytes);
  const int64_t slack = 1024;
  auto near = [&](int64_t got, int64_t want, const char* what) {
    EXPECT_GE(got, want) << what;
    EXPECT_LE(got, want + slack) << what;
  };
  near(live[1], model, "flat: one model-sized buffer");
  near(live[2], model, "ddp: buckets holding every gradient");
  near(live[3], model, "ddp-view: the same buckets");
  near(live[4], model + static_cast<int64_t>(full), "ddp+opt: buckets and the full state");
  // ZeRO-2: its shards of parameters and reduced gradients and of the state (4 x S floats, S the
  // largest shard) and the staging (two rounds of at most the bucket cap, 64 KiB here).
  const auto shard = static_cast<int64_t>(largest / 2);  // S floats, in bytes
  EXPECT_GE(live[5], 4 * shard) << "zero";
  EXPECT_LE(live[5], 4 * shard + 2 * 65536 + slack) << "zero";
  EXPECT_GE(live[6], 4 * shard) << "zero-owner";
  EXPECT_LE(live[6], 4 * shard + 2 * 65536 + slack) << "zero-owner";
  // ZeRO-3: between steps its shards and state only; in a step at most two units' full parameters
  // and gradients (n C floats each) and one reduce-scatter result (fully_sharded.h's bound).
  const auto unit = static_cast<int64_t>(n * chunk * 4);
  near(live[7], 4 * static_cast<int64_t>(local), "zero3: shards and state");
  EXPECT_GT(peak[7], live[7] + unit) << "zero3 gathers full units in a step";
  EXPECT_LE(peak[7], live[7] + 4 * unit + static_cast<int64_t>(chunk * 4) + slack) << "zero3";
  EXPECT_LT(peak[7], live[4]) << "zero3's peak is below ddp+opt's resident memory";
  std::remove(json.c_str());
}

INSTANTIATE_TEST_SUITE_P(Backends, DdpStepRun,
                         testing::Values(Case{"gloo", 2}, Case{"verbs", 2}, Case{"verbs", 3}),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.backend) + "_" +
                                  std::to_string(info.param.ranks) + "ranks";
                         });

// One wrong element on the last rank: every checked output catches it and the run fails.
TEST(DdpStepRunChecker, InjectedWrongElementIsCaught) {
  RunResult r = runPerf("ddp_step_perf", 2, tinyArgs("verbs"), {{"C10D_PERF_INJECT_ERROR", "1"}});
  EXPECT_EQ(r.exitCodes(), (std::vector<int>{1, 1})) << r.out0 << r.err;
  const std::vector<StepRow> rows = rowsOf(r.out0);
  ASSERT_EQ(rows.size(), allStepModes().size()) << r.out0 << r.err;
  int64_t total = 0;
  for (const StepRow& row : rows) {
    StepMode mode;
    ASSERT_TRUE(parseStepMode(row.mode, &mode));
    // ddp+opt checks its averaged gradients and its parameters: one planted in each.
    const int64_t want = mode == StepMode::kNone ? -1 : mode == StepMode::kDdpOpt ? 2 : 1;
    EXPECT_EQ(row.wrong, want) << row.mode;
    total += std::max<int64_t>(0, row.wrong);
  }
  EXPECT_TRUE(has(r.out0, "# Out of bounds values : " + std::to_string(total) + " FAILED\n"))
      << r.out0;
}

TEST(DdpStepRunChecker, SingleProcessAndBadFlags) {
  RunResult one =
      runPerf("ddp_step_perf", 0, tinyArgs("verbs", {"--modes", "none,ddp,zero2,zero3"}));
  ASSERT_TRUE(one.allOk()) << one.out0 << one.err;
  EXPECT_TRUE(has(one.out0, "world size 1 launcher none")) << one.out0;
  const std::vector<StepRow> rows = rowsOf(one.out0);
  ASSERT_EQ(rows.size(), 4u) << one.out0;
  EXPECT_EQ(rows[1].mode, "ddp");
  EXPECT_EQ(rows[1].busBw, 0) << "2(n-1)/n = 0: nothing crosses a link";
  EXPECT_EQ(rows[1].wrong, 0);
  EXPECT_EQ(rows[2].mode, "zero");  // zero2 is zero's other name
  EXPECT_EQ(rows[2].wrong, 0);
  EXPECT_EQ(rows[3].mode, "zero3");
  EXPECT_EQ(rows[3].wrong, 0);

  RunResult bad = runPerf("ddp_step_perf", 0, {"--modes", "ddp,bogus"});
  EXPECT_EQ(bad.exitCodes(), std::vector<int>{2});
  EXPECT_TRUE(has(bad.err, "invalid mode 'bogus' in --modes 'ddp,bogus'")) << bad.err;
  EXPECT_TRUE(has(bad.err, "USAGE: ddp_step_perf")) << bad.err;
}

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
