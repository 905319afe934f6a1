// ddp_step_perf: what one data-parallel training step costs with the DDP Reducer (bucketed
// allreduces overlapping backward), with one flat allreduce after backward, and with no
// communication at all, on any backend and world size; and how much optimizer state each rank
// holds (DDP keeps a full copy on every rank).
//
// The model: --layers layers of --params-per-layer fp32 parameters, one tensor per layer
// (perf/common/ddp_step.h has the flags). Backward visits the layers last to first; for each it
// spends a fixed amount of real work on the layer's gradient (passes of x = 0.5 x + 1, a vectorized
// multiply-add streaming through the gradient: memory-bound once a layer outgrows the caches, like
// the element-wise half of a real backward), then writes the gradient's final values, then (ddp
// modes) calls Reducer::markReady for the layer. The work is a number of element updates, not a
// wall-clock budget, so that CPU contention from communication slows backward down as it would a
// real one.
//
// Calibration (all ranks, before timing; printed in the header): the kernel's speed is measured
// on one layer's gradient (ns per element update, averaged over ranks, measured while every rank
// runs it, so oversubscribed ranks calibrate under the same contention as the steps); then, unless
// --compute-us-per-layer is given, one flat allreduce of the whole model is timed (median of 3,
// slowest rank), and backward's compute is set to --compute-ratio (default 1) x that time, spread
// evenly over the layers: with the default, perfect overlap would hide all communication and the
// ddp step would take as long as the none step.
//
// Modes, timed side by side: each of the -w + -n iterations runs every mode once, in an order that
// rotates with the iteration; every step starts after a barrier (untimed).
//   none      backward only.
//   flat      backward; then every gradient copied into one flat buffer, one SUM allreduce, divide
//             by the world size, copy back: what a loop without a Reducer does.
//   ddp       backward with markReady per layer; Reducer::finalize() (buckets of --bucket-cap-mb,
//             the first --first-bucket-mb, launched as they fill, overlapping the rest of backward).
//   ddp-view  as ddp with gradientAsBucketView: backward writes the gradients into the buckets.
// A step's time is the slowest rank's; a mode's row gives the fastest and the median step.
// `exposed` is the median step minus none's median step: the communication backward did not hide.
// `comm` is the median (over steps, slowest rank) of the time during which at least one of the
// step's allreduces was in flight (perf/common/timed_group.h wraps the group to see the Reducer's
// bucket allreduces); busbw = 2(n-1)/n x model bytes / comm, comparable with all_reduce_perf's.
// `overlap` is the Reducer's own IterationStats: 100 x sum(overlappedSeconds) / sum(commSeconds)
// over every timed step and rank (the share of each bucket's launch-to-completion time that
// passed before finalize() began).
//
// Check (-c): after timing, each reducing mode runs -c more steps and every rank compares every
// gradient with the mean over ranks, which it computes itself (the per-rank values are small
// dyadic fractions: every sum is exact). `#wrong` is the number of wrong elements over ranks; any
// makes the exit status 1. C10D_PERF_INJECT_ERROR=1 corrupts one element on the last rank before
// the check (tests the checker).
//
// Optimizer state: --optimizer's (default Adam: exp_avg and exp_avg_sq, 8 bytes per parameter)
// bytes per rank under DDP, where every rank holds the full state (FlatOptimizer::stateBytes()).
//
// Output on rank 0 (-J: the same as JSON); the other ranks only compute. Times and counts travel
// over the group's Store (perf/common/world.h), never through the backend being measured.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c10d/config.h"
#include "c10d/error.h"
#include "layers/common/device_ops.h"
#include "layers/common/flat_buffer.h"
#include "layers/ddp/reducer.h"
#include "layers/optim/flat_optimizer.h"
#include "perf/common/buffer.h"
#include "perf/common/ddp_step.h"
#include "perf/common/report.h"
#include "perf/common/timed_group.h"
#include "perf/common/world.h"

namespace c10d {
namespace perf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

// ---- the simulated backward ----

// One pass of backward work over x[0, n): a multiply-add per element. The asm statement tells the
// compiler the memory is used, so that no pass is optimized away before the gradient is written.
void workPass(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.5f + 1.0f;
  asm volatile("" : : "r"(x) : "memory");
}

// Rank `rank`'s gradient element i of `layer`: multiples of 1/8 below 3, so sums over up to 2^20
// ranks are exact in fp32 and the mean is checkable to the last bit of the division.
float gradValue(int rank, size_t layer, size_t i) {
  return 0.25f * static_cast<float>(rank % 8 + 1) + 0.125f * static_cast<float>((i + layer) % 8);
}

// The mean over `n` ranks of gradValue, as the reducing modes compute it (SUM, then divide).
float expectedMean(int n, size_t layer, size_t i) {
  float sum = 0;
  for (int r = 0; r < n; ++r) sum += gradValue(r, layer, i);
  return sum / static_cast<float>(n);
}

// Layer `layer`'s backward: `updates` element updates on g[0, n) (at least n: the final write).
void layerBackward(float* g, size_t n, size_t updates, int rank, size_t layer) {
  size_t extra = updates > n ? updates - n : 0;
  for (; extra >= n; extra -= n) workPass(g, n);
  if (extra > 0) workPass(g, extra);
  for (size_t i = 0; i < n; ++i) g[i] = gradValue(rank, layer, i);
}

// ---- the benchmark ----

struct ModeResult {
  // Per timed step, this rank's.
  std::vector<double> step, comm;
  double overlapped = 0, reducerComm = 0;  // Reducer IterationStats sums
  int64_t wrong = -1;                      // over ranks; -1 = not checked
};

class Bench {
 public:
  Bench(const DdpStepOptions& o, std::shared_ptr<ProcessGroup> world)
      : o_(o),
        timeout_(static_cast<int64_t>(o.timeoutSec) * 1000),
        world_(std::move(world)),
        pg_(std::make_shared<TimedGroup>(world_)),
        rank_(world_->rank()),
        n_(world_->size()),
        ex_(world_->store(), rank_, n_),
        ops_(layers::cpuDeviceOps()) {
    const char* inject = std::getenv("C10D_PERF_INJECT_ERROR");
    inject_ = inject != nullptr && std::atoi(inject) != 0 && rank_ == n_ - 1;
  }

  RankExchange& exchange() { return ex_; }
  bool isMain() const { return rank_ == 0; }
  void print(const std::string& s) const {
    if (!isMain()) return;
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  }

  bool uses(StepMode m) const {
    return std::find(o_.modes.begin(), o_.modes.end(), m) != o_.modes.end();
  }

  // Allocates the model and what each mode needs; builds the Reducers (collective).
  void setUp() {
    const size_t per = o_.paramsPerLayer;
    data_.assign(o_.layers, std::vector<float>(per, 0.0f));
    grad_.assign(o_.layers, std::vector<float>(per, 0.0f));
    std::vector<ddp::Parameter> params;
    for (size_t l = 0; l < o_.layers; ++l) {
      params.push_back({detail::str("layer", l, ".weight"), tensorOf(data_[l].data(), per),
                        tensorOf(grad_[l].data(), per)});
    }
    ddp::ReducerOptions ro;
    ro.bucketCapBytes = o_.bucketCapBytes;
    ro.firstBucketBytes = o_.firstBucketBytes;
    ro.timeout = timeout_;
    if (uses(StepMode::kFlat) || o_.computeUsPerLayer < 0) {
      flat_ = layers::FlatBuffer(DataType::kFloat32, Device::cpu(),
                                 std::vector<size_t>(o_.layers, per), *ops_);
    }
    if (uses(StepMode::kDdp)) ddp_ = std::make_unique<ddp::Reducer>(params, pg_, ro);
    if (uses(StepMode::kDdpView)) {
      ro.gradientAsBucketView = true;
      ddpView_ = std::make_unique<ddp::Reducer>(params, pg_, ro);
    }
  }

  // Sets updates_ (element updates per layer) and describes how.
  std::string calibrate() {
    const size_t per = o_.paramsPerLayer;
    std::vector<float> scratch(per, 1.0f);
    workPass(scratch.data(), per);  // fault in, warm up
    barrier();
    size_t passes = 0;
    const auto t0 = Clock::now();
    do {
      workPass(scratch.data(), per);
      ++passes;
    } while (secondsSince(t0) < 0.05);
    const double nsLocal = secondsSince(t0) * 1e9 / (static_cast<double>(passes) * per);
    nsPerUpdate_ = ex_.combine(nsLocal, TimeCombine::kAverage);

    std::string how;
    if (o_.computeUsPerLayer >= 0) {
      usPerLayer_ = o_.computeUsPerLayer;
      how = "given (--compute-us-per-layer)";
    } else {
      flatAllreduceSec_ = timeFlatAllreduce();
      usPerLayer_ = o_.computeRatio * flatAllreduceSec_ * 1e6 / static_cast<double>(o_.layers);
      char buf[160];
      std::snprintf(buf, sizeof(buf), "calibrated: %.2f x one flat allreduce of the model (%.3f ms)",
                    o_.computeRatio, flatAllreduceSec_ * 1e3);
      how = buf;
    }
    const double want = usPerLayer_ * 1e3 / nsPerUpdate_;
    updates_ = std::max(per, static_cast<size_t>(std::llround(want)));
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "# backward: %.1f us compute per layer (%.3f ms per step), %s; kernel %.3f ns "
                  "per element update -> %.2f passes over each layer's gradient\n",
                  updates_ * nsPerUpdate_ * 1e-3, updates_ * nsPerUpdate_ * 1e-6 * o_.layers,
                  how.c_str(), nsPerUpdate_, static_cast<double>(updates_) / per);
    return buf;
  }

  // The Reducer's buckets as built (after warm-up: rebuilt once from the ready order).
  std::string bucketLine() const {
    const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
    if (!r) return "";
    std::string line = detail::str("# reducer: bucket cap ", mib(o_.bucketCapBytes),
                                   ", first bucket ", mib(o_.firstBucketBytes), " -> ");
    const auto buckets = r->buckets();
    line += detail::str(buckets.size(), " buckets (MiB, launch order):");
    for (const auto& b : buckets) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), " %.2f", b.bytes / (1024.0 * 1024.0));
      line += buf;
    }
    return line + "\n";
  }

  // -w untimed, then -n timed iterations; each runs every mode once, in a rotating order.
  void run() {
    results_.assign(o_.modes.size(), ModeResult{});
    const int total = o_.warmupIters + o_.iters;
    for (int it = 0; it < total; ++it) {
      const bool timed = it >= o_.warmupIters;
      for (size_t k = 0; k < o_.modes.size(); ++k) {
        const size_t m = (k + static_cast<size_t>(it)) % o_.modes.size();
        barrier();
        pg_->reset();
        const auto t0 = Clock::now();
        ddp::IterationStats st = step(o_.modes[m]);
        const double sec = secondsSince(t0);
        const TimedGroup::Timeline tl = pg_->collect(timeout_);
        if (!timed) continue;
        ModeResult& r = results_[m];
        r.step.push_back(sec);
        r.comm.push_back(tl.busySeconds);
        r.overlapped += st.overlappedSeconds;
        r.reducerComm += st.commSeconds;
      }
    }
  }

  // -c checked steps per reducing mode.
  void check() {
    if (o_.check == 0) return;
    for (size_t m = 0; m < o_.modes.size(); ++m) {
      const StepMode mode = o_.modes[m];
      if (mode == StepMode::kNone) continue;
      int64_t wrong = 0;
      for (int c = 0; c < o_.check && wrong == 0; ++c) {
        barrier();
        step(mode);
        pg_->collect(timeout_);
        if (inject_) grad(mode, 0)[0] += 1.0f;
        int64_t local = 0;
        for (size_t l = 0; l < o_.layers; ++l) {
          const float* g = grad(mode, l);
          for (size_t i = 0; i < o_.paramsPerLayer; ++i) {
            const float want = expectedMean(n_, l, i);
            if (!(std::fabs(g[i] - want) <= 1e-6f * std::fabs(want))) ++local;
          }
        }
        wrong = ex_.sum(local);
      }
      results_[m].wrong = wrong;
    }
  }

  // Rank 0: the table rows (every rank must call: it exchanges the per-step times).
  std::vector<StepRow> rows() {
    std::vector<StepRow> rows;
    double noneMed = std::nan("");
    for (size_t m = 0; m < o_.modes.size(); ++m) {
      const ModeResult& r = results_[m];
      const std::vector<double> step = slowestRank(r.step);
      const std::vector<double> comm = slowestRank(r.comm);
      const double overlapped = sumOverRanks(r.overlapped);
      const double reducerComm = sumOverRanks(r.reducerComm);
      StepRow row;
      row.mode = stepModeName(o_.modes[m]);
      row.stepMinMs = *std::min_element(step.begin(), step.end()) * 1e3;
      row.stepMedMs = median(step) * 1e3;
      if (o_.modes[m] == StepMode::kNone) noneMed = row.stepMedMs;
      row.wrong = r.wrong;
      if (o_.modes[m] != StepMode::kNone) {
        const double commMed = median(comm);
        row.commMs = commMed * 1e3;
        row.busBw = commMed > 0 ? 2.0 * (n_ - 1) / n_ * static_cast<double>(o_.modelBytes) /
                                      commMed / 1e9
                                : 0.0;
      }
      if (o_.modes[m] == StepMode::kDdp || o_.modes[m] == StepMode::kDdpView) {
        row.overlapPct = reducerComm > 0 ? 100.0 * overlapped / reducerComm : 0.0;
      }
      rows.push_back(row);
    }
    for (StepRow& row : rows) row.exposedMs = row.stepMedMs - noneMed;  // NaN without none
    return rows;
  }

  // DDP's optimizer state: the full state on every rank.
  size_t ddpStateBytes() const {
    optim::OptimizerOptions oo;
    oo.algorithm = o_.optimizer;
    return oo.slotNames().size() * o_.layers * o_.paramsPerLayer * sizeof(float);
  }

  double usPerLayer() const { return usPerLayer_; }
  double nsPerUpdate() const { return nsPerUpdate_; }
  size_t updatesPerLayer() const { return updates_; }
  double flatAllreduceSec() const { return flatAllreduceSec_; }
  std::vector<size_t> bucketBytes() const {
    std::vector<size_t> out;
    const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
    if (r) {
      for (const auto& b : r->buckets()) out.push_back(b.bytes);
    }
    return out;
  }
  void shutdown() { world_->shutdown(); }

 private:
  void barrier() { world_->barrier()->wait(timeout_); }

  float* grad(StepMode mode, size_t layer) {
    if (mode == StepMode::kDdpView) return ddpView_->gradView(layer).ptr<float>();
    return grad_[layer].data();
  }

  // One step of `mode`; the Reducer's stats for the ddp modes.
  ddp::IterationStats step(StepMode mode) {
    ddp::Reducer* reducer = mode == StepMode::kDdp       ? ddp_.get()
                            : mode == StepMode::kDdpView ? ddpView_.get()
                                                         : nullptr;
    for (size_t l = o_.layers; l-- > 0;) {
      layerBackward(grad(mode, l), o_.paramsPerLayer, updates_, rank_, l);
      if (reducer) reducer->markReady(l);
    }
    if (reducer) return reducer->finalize();
    if (mode == StepMode::kFlat) flatAllreduce();
    return {};
  }

  // flat: copy in, one allreduce, average, copy out.
  void flatAllreduce() {
    for (size_t l = 0; l < o_.layers; ++l) {
      ops_->copy(flat_.view(l), tensorOf(grad_[l].data(), o_.paramsPerLayer));
    }
    pg_->allreduce(flat_.tensor(), AllreduceOptions{ReduceOp::SUM, timeout_})->wait(timeout_);
    ops_->divide(flat_.tensor(), n_);
    for (size_t l = 0; l < o_.layers; ++l) {
      ops_->copy(tensorOf(grad_[l].data(), o_.paramsPerLayer), flat_.view(l));
    }
  }

  // The allreduce of the whole model alone: median of 3 after one warm-up, slowest rank.
  double timeFlatAllreduce() {
    std::vector<double> t;
    for (int i = 0; i < 4; ++i) {
      barrier();
      const auto t0 = Clock::now();
      world_->allreduce(flat_.tensor(), AllreduceOptions{ReduceOp::SUM, timeout_})->wait(timeout_);
      if (i > 0) t.push_back(secondsSince(t0));
    }
    return ex_.combine(median(t), TimeCombine::kMax);
  }

  // Per step, the maximum over ranks of `mine` (same length on every rank).
  std::vector<double> slowestRank(const std::vector<double>& mine) {
    const std::string bytes(reinterpret_cast<const char*>(mine.data()),
                            mine.size() * sizeof(double));
    std::vector<double> out(mine);
    int r = 0;
    for (const std::string& s : ex_.allgather(bytes)) {
      C10D_CHECK_EQ(s.size(), bytes.size(), "ddp_step_perf: step times from rank ", r);
      for (size_t i = 0; i < out.size(); ++i) {
        double v = 0;
        std::memcpy(&v, s.data() + i * sizeof(double), sizeof(double));
        out[i] = std::max(out[i], v);
      }
      ++r;
    }
    return out;
  }

  double sumOverRanks(double mine) {
    return ex_.combine(mine, TimeCombine::kAverage) * n_;
  }

  const DdpStepOptions& o_;
  const Milliseconds timeout_;
  std::shared_ptr<ProcessGroup> world_;
  std::shared_ptr<TimedGroup> pg_;
  const int rank_;
  const int n_;
  RankExchange ex_;
  std::shared_ptr<layers::DeviceOps> ops_;
  bool inject_ = false;

  std::vector<std::vector<float>> data_, grad_;
  layers::FlatBuffer flat_;
  std::unique_ptr<ddp::Reducer> ddp_, ddpView_;
  size_t updates_ = 0;
  double nsPerUpdate_ = 0, usPerLayer_ = 0, flatAllreduceSec_ = 0;
  std::vector<ModeResult> results_;
};

std::string timeNow() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

nlohmann::json jsonNumber(double v) {
  return std::isnan(v) || v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
}

int run(int argc, char** argv, const std::string& program, const DdpStepOptions& o) {
  const std::string start = timeNow();
  const LaunchInfo launch = detectLaunch();
  PerfOptions po;
  po.backend = o.backend;
  po.timeoutSec = o.timeoutSec;
  std::shared_ptr<ProcessGroup> world = createWorld(launch, po);
  Bench b(o, world);
  b.print(detail::str("# DDP step test starting: ", program, "\n"));
  b.print(detail::str("# c10d version ", C10D_VERSION, " backend ", world->backendName(),
                      " device cpu world size ", world->size(), " launcher ", launch.launcher,
                      "\n"));
  b.print(detail::str("# model ", mib(static_cast<double>(o.modelBytes)), " fp32: ", o.layers,
                      " layers x ", o.paramsPerLayer, " parameters (one tensor per layer)\n"));
  std::string modes;
  for (StepMode m : o.modes) modes += std::string(modes.empty() ? "" : ",") + stepModeName(m);
  b.print(detail::str("# warmup iters: ", o.warmupIters, " iters: ", o.iters,
                      " validation: ", o.check, " modes: ", modes,
                      " (interleaved, order rotated every iteration)\n"));
  b.print("#\n# Using devices\n");
  const std::vector<std::string> lines = b.exchange().allgather(
      rankLine(world->rank(), 0, static_cast<int>(getpid()), hostName(), 0, describeDevice(Device::cpu()),
               world->describe()));
  for (const auto& l : lines) b.print(l);
  b.print("#\n");

  b.setUp();
  b.print(b.calibrate());
  b.run();
  b.print(b.bucketLine());
  b.check();
  const std::vector<StepRow> rows = b.rows();
  b.print("#\n" + stepTableHeader());
  int64_t wrong = 0;
  for (const StepRow& r : rows) {
    b.print(stepTableRow(r));
    wrong += std::max<int64_t>(0, r.wrong);
  }
  optim::OptimizerOptions oo;
  oo.algorithm = o.optimizer;
  const size_t ddpState = b.ddpStateBytes();
  b.print(detail::str("#\n# optimizer state per rank (", optim::algorithmName(o.optimizer), ", ",
                      oo.slotNames().size(), " slots): ddp ", mib(static_cast<double>(ddpState)),
                      " (the full state on every rank)\n"));
  b.print(detail::str("# Out of bounds values : ", wrong, wrong ? " FAILED" : " OK", "\n"));
  b.print(detail::str("#\n# DDP step test concluded: ", program, "\n#\n"));

  if (b.isMain() && !o.jsonPath.empty()) {
    nlohmann::json doc;
    doc["program"] = program;
    doc["version"] = C10D_VERSION;
    doc["start_time"] = start;
    doc["args"] = nlohmann::json::array();
    for (int i = 0; i < argc; ++i) doc["args"].push_back(argv[i]);
    doc["backend"] = world->backendName();
    doc["describe"] = world->describe();
    doc["device"] = "cpu";
    doc["world_size"] = world->size();
    doc["launcher"] = launch.launcher;
    doc["devices"] = lines;
    doc["config"] = {
        {"model_bytes", o.modelBytes},
        {"layers", o.layers},
        {"params_per_layer", o.paramsPerLayer},
        {"bucket_cap_bytes", o.bucketCapBytes},
        {"first_bucket_bytes", o.firstBucketBytes},
        {"bucket_bytes", b.bucketBytes()},
        {"iterations", o.iters},
        {"warmup_iterations", o.warmupIters},
        {"check", o.check},
        {"modes", modes},
        {"compute_us_per_layer", b.usPerLayer()},
        {"compute_ns_per_update", b.nsPerUpdate()},
        {"compute_updates_per_layer", b.updatesPerLayer()},
        {"compute_ratio", o.computeUsPerLayer < 0 ? jsonNumber(o.computeRatio) : nullptr},
        {"flat_allreduce_ms", o.computeUsPerLayer < 0 ? jsonNumber(b.flatAllreduceSec() * 1e3)
                                                       : nullptr},
    };
    for (const StepRow& r : rows) {
      doc["results"].push_back({{"mode", r.mode},
                                {"step_ms_min", r.stepMinMs},
                                {"step_ms_median", r.stepMedMs},
                                {"exposed_ms", std::isnan(r.exposedMs)
                                                   ? nlohmann::json(nullptr)
                                                   : nlohmann::json(r.exposedMs)},
                                {"comm_ms", jsonNumber(r.commMs)},
                                {"overlap_pct", jsonNumber(r.overlapPct)},
                                {"bus_bw", jsonNumber(r.busBw)},
                                {"nwrong", r.wrong < 0 ? nlohmann::json(nullptr)
                                                       : nlohmann::json(r.wrong)}});
    }
    doc["optimizer_state"] = {{"optimizer", optim::algorithmName(o.optimizer)},
                              {"ddp_bytes_per_rank", ddpState}};
    doc["out_of_bounds"] = wrong;
    doc["end_time"] = timeNow();
    std::ofstream f(o.jsonPath, std::ios::trunc);
    f << doc.dump(2) << "\n";
    C10D_CHECK(f.good(), "ddp_step_perf: cannot write the JSON file '", o.jsonPath, "'");
  }
  b.shutdown();
  // Rank 0 serves the store: it leaves last.
  b.exchange().finish(Milliseconds(static_cast<int64_t>(o.timeoutSec) * 1000));
  return wrong != 0 ? 1 : 0;
}

}  // namespace
}  // namespace perf
}  // namespace c10d

int main(int argc, char** argv) {
  using namespace c10d::perf;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string program = argv[0];
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  DdpStepOptions o;
  const ParseResult parsed = parseDdpStepOptions(argc, argv, &o);
  if (parsed.action == ParseResult::kHelp) {
    std::fputs(ddpStepUsage(program).c_str(), stdout);
    return 0;
  }
  if (parsed.action == ParseResult::kError) {
    std::fprintf(stderr, "%s: %s\n%s", program.c_str(), parsed.message.c_str(),
                 ddpStepUsage(program).c_str());
    return 2;
  }
  try {
    return run(argc, argv, program, o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
}
