// ddp_step_perf: what one data-parallel training step costs with the DDP Reducer (bucketed
// allreduces overlapping backward), with one flat allreduce after backward, with no communication,
// and with the ZeRO optimizer, on any backend and world size; and how much optimizer state each
// rank holds under DDP (a full copy) and under ZeRO (its shard).
//
// The model and its backward: perf/common/synthetic_model.h (--layers layers of
// --params-per-layer fp32 parameters, last layer first; real work per layer, then the gradient's
// final values, then markReady for the layer in the modes that have a Reducer or ZeRO optimizer).
//
// Calibration (every rank, before timing; printed in the header): the kernels' speed is measured
// on one layer while every rank runs them (so oversubscribed ranks calibrate under the contention
// the steps will see), averaged over ranks. Unless --compute-us-per-layer is given, one allreduce
// of the whole model is timed (one flat buffer, median of 3 after a warm-up, slowest rank) and
// backward's compute is set to --compute-ratio (default 1) x that time, spread evenly over the
// layers: then a perfect overlap would hide all of the communication and ddp's step would take
// as long as none's. A layer's compute is never below its gradient write.
//
// Modes, timed side by side: each of the -w + -n iterations runs every mode once, in an order that
// rotates with the iteration; every step starts after a barrier (untimed, on the world group).
//   none        backward only.
//   flat        backward; every gradient copied into one flat buffer, one SUM allreduce, divide by
//               the world size, copy back: what a loop without a Reducer does.
//   ddp         backward with Reducer::markReady per layer, then finalize(): buckets of
//               --bucket-cap-mb (the first --first-bucket-mb) allreduced as they fill, overlapping
//               the rest of backward.
//   ddp-view    ddp with gradientAsBucketView: backward writes the gradients into the buckets.
//   ddp+opt     ddp, then a --optimizer step over the whole model on every rank (FlatOptimizer).
//   zero        backward with ShardedOptimizer::markReady, then step(): one reduce-scatter of the
//               gradients, the owner's optimizer step on its shard, one allgather of parameters.
//   zero-owner  zero with kReduceToOwner: buckets reduced to their owner as they fill (ShardedDDP),
//               overlapping backward.
// A step's time is the slowest rank's; a row gives the fastest and the median step. `exposed` is
// the median step minus none's: the communication backward did not hide (plus, for ddp+opt and
// the zero modes, the optimizer step). `comm` is the median (over steps; slowest rank) time during
// which at least one of the step's collectives was in flight (perf/common/timed_group.h wraps the
// group to see the Reducer's and ZeRO's own collectives); busbw = 2(n-1)/n x model bytes / comm,
// comparable with all_reduce_perf's (reduce-scatter + allgather move the same bytes per rank as an
// allreduce). `overlap` is the Reducer's IterationStats: 100 x sum(overlappedSeconds) /
// sum(commSeconds) over every timed step and rank (the share of each bucket's launch-to-completion
// time that passed before finalize() began; the buckets queue behind each other, so a bucket's
// time includes its wait for the earlier ones).
//
// Check (-c): after timing, each mode but none runs -c more steps; every rank compares what the
// mode produced with references it computes itself: the averaged gradients (flat, ddp, ddp-view,
// ddp+opt) against the exact mean over ranks, and the parameters (ddp+opt, zero, zero-owner)
// against one unsharded optimizer stepped as many times with that mean (synthetic_model.h).
// `#wrong` counts wrong elements over ranks; any makes the exit status 1.
// C10D_PERF_INJECT_ERROR=1 corrupts one element on the last rank before each check.
//
// Optimizer state: --optimizer's (default Adam: exp_avg and exp_avg_sq, 8 bytes per parameter)
// bytes per rank: DDP's full state against ZeRO's ShardedOptimizer::localStateBytes() at this
// world size (largest and smallest over ranks), and fullStateBytes().
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
#include <map>
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
#include "layers/zero/sharded_optimizer.h"
#include "perf/common/buffer.h"
#include "perf/common/ddp_step.h"
#include "perf/common/report.h"
#include "perf/common/synthetic_model.h"
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

// "%.<digits>f"
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

bool isDdp(StepMode m) {
  return m == StepMode::kDdp || m == StepMode::kDdpView || m == StepMode::kDdpOpt;
}
bool isZero(StepMode m) {
  return m == StepMode::kZero || m == StepMode::kZeroOwner;
}
// Modes whose output is the averaged gradients / updated parameters.
bool checksGrads(StepMode m) {
  return m == StepMode::kFlat || m == StepMode::kDdp || m == StepMode::kDdpView ||
         m == StepMode::kDdpOpt;
}
bool checksParams(StepMode m) {
  return m == StepMode::kDdpOpt || isZero(m);
}

struct ModeResult {
  std::vector<double> step, comm;          // per timed step, this rank's
  double overlapped = 0, reducerComm = 0;  // Reducer IterationStats sums, this rank's
  int64_t wrong = -1;                      // over ranks; -1 = not checked
};

struct StateBytes {
  size_t ddp = 0;                   // per rank: the full state
  size_t zeroFull = 0;              // ShardedOptimizer::fullStateBytes()
  size_t zeroMax = 0, zeroMin = 0;  // localStateBytes() over ranks
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
        ops_(layers::cpuDeviceOps()),
        model_(o.layers, o.paramsPerLayer) {
    const char* inject = std::getenv("C10D_PERF_INJECT_ERROR");
    inject_ = inject != nullptr && std::atoi(inject) != 0 && rank_ == n_ - 1;
    optimizer_.algorithm = o.optimizer;
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

  // What each mode needs; the Reducers and ZeRO optimizers are collective to build.
  void setUp() {
    const size_t per = o_.paramsPerLayer;
    auto params = [&](float* data) {
      std::vector<ddp::Parameter> p;
      for (size_t l = 0; l < o_.layers; ++l) {
        p.push_back({detail::str("layer", l, ".weight"), tensorOf(data + l * per, per),
                     tensorOf(model_.layerGrad(l), per)});
      }
      return p;
    };
    if (uses(StepMode::kFlat) || o_.computeUsPerLayer < 0) {
      flat_ = layers::FlatBuffer(DataType::kFloat32, Device::cpu(),
                                 std::vector<size_t>(o_.layers, per), *ops_);
    }
    ddp::ReducerOptions ro;
    ro.bucketCapBytes = o_.bucketCapBytes;
    ro.firstBucketBytes = o_.firstBucketBytes;
    ro.timeout = timeout_;
    if (uses(StepMode::kDdp) || uses(StepMode::kDdpOpt)) {
      ddp_ = std::make_unique<ddp::Reducer>(params(model_.data.data()), pg_, ro);
    }
    if (uses(StepMode::kDdpOpt)) {
      ddpOptimizer_ = std::make_unique<optim::FlatOptimizer>(optimizer_, model_.numel());
    }
    if (uses(StepMode::kDdpView)) {
      ro.gradientAsBucketView = true;
      ddpView_ = std::make_unique<ddp::Reducer>(params(model_.data.data()), pg_, ro);
    }
    // zero always exists: it reports the sharded state bytes. Each ZeRO optimizer steps its own
    // copy of the parameters (they share the gradients).
    zero::ZeroOptions zo;
    zo.optimizer = optimizer_;
    zo.bucketCapBytes = o_.bucketCapBytes;
    zo.timeout = timeout_;
    zeroData_.resize(model_.numel());
    initParameters(zeroData_.data(), o_.layers, per);
    zero_ = std::make_unique<zero::ShardedOptimizer>(params(zeroData_.data()), pg_, zo);
    if (uses(StepMode::kZeroOwner)) {
      zo.gradReduction = zero::ZeroOptions::GradReduction::kReduceToOwner;
      zeroOwnerData_.resize(model_.numel());
      initParameters(zeroOwnerData_.data(), o_.layers, per);
      zeroOwner_ = std::make_unique<zero::ShardedOptimizer>(params(zeroOwnerData_.data()), pg_, zo);
    }
  }

  // Sets extraUpdates_ (work per layer beyond the gradient write); returns the header line.
  std::string calibrate() {
    barrier();
    const KernelSpeed local = measureKernels(o_.paramsPerLayer, 0.05);
    speed_.passNs = ex_.combine(local.passNs, TimeCombine::kAverage);
    speed_.writeNs = ex_.combine(local.writeNs, TimeCombine::kAverage);
    const double per = static_cast<double>(o_.paramsPerLayer);
    std::string how;
    if (o_.computeUsPerLayer >= 0) {
      targetUs_ = o_.computeUsPerLayer;
      how = "as given (--compute-us-per-layer)";
    } else {
      flatAllreduceSec_ = timeFlatAllreduce();
      targetUs_ = o_.computeRatio * flatAllreduceSec_ * 1e6 / static_cast<double>(o_.layers);
      how = detail::str("calibrated: ", fixed(o_.computeRatio, 2),
                        " x one allreduce of the whole model (", fixed(flatAllreduceSec_ * 1e3, 3),
                        " ms)");
    }
    const double writeUs = speed_.writeNs * per * 1e-3;
    const double extraUs = std::max(0.0, targetUs_ - writeUs);
    extraUpdates_ = static_cast<size_t>(std::llround(extraUs * 1e3 / speed_.passNs));
    const double layerUs = writeUs + static_cast<double>(extraUpdates_) * speed_.passNs * 1e-3;
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "# backward: %.1f us compute per layer, %.3f ms per step (target %.1f us per "
                  "layer, %s); per layer: %.2f passes of %.3f ns per element + the gradient write "
                  "(%.3f ns per element)%s\n",
                  layerUs, layerUs * 1e-3 * static_cast<double>(o_.layers), targetUs_, how.c_str(),
                  static_cast<double>(extraUpdates_) / per, speed_.passNs, speed_.writeNs,
                  targetUs_ < writeUs ? " (the gradient write alone exceeds the target)" : "");
    computeUsPerLayer_ = layerUs;
    return buf;
  }

  // The Reducer's buckets as they are after warm-up (rebuilt once from the ready order).
  std::string bucketLine() const {
    const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
    if (!r) return "";
    std::string line = detail::str("# reducer: bucket cap ", mib(o_.bucketCapBytes),
                                   ", first bucket ", mib(o_.firstBucketBytes), " -> ");
    line += detail::str(r->buckets().size(), " buckets (MiB, launch order):");
    for (size_t bytes : bucketBytes()) line += " " + fixed(bytes / (1024.0 * 1024.0), 2);
    return line + "\n";
  }
  std::vector<size_t> bucketBytes() const {
    std::vector<size_t> out;
    const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
    if (r) {
      for (const auto& b : r->buckets()) out.push_back(b.bytes);
    }
    return out;
  }

  // -w untimed, then -n timed iterations; each runs every mode once, in a rotating order.
  void run() {
    results_.assign(o_.modes.size(), ModeResult{});
    const int total = o_.warmupIters + o_.iters;
    for (int it = 0; it < total; ++it) {
      for (size_t k = 0; k < o_.modes.size(); ++k) {
        const size_t m = (k + static_cast<size_t>(it)) % o_.modes.size();
        barrier();
        pg_->reset();
        const auto t0 = Clock::now();
        const ddp::IterationStats st = step(o_.modes[m]);
        const double sec = secondsSince(t0);
        const TimedGroup::Timeline tl = pg_->collect(timeout_);
        if (it < o_.warmupIters) continue;
        ModeResult& r = results_[m];
        r.step.push_back(sec);
        r.comm.push_back(tl.busySeconds);
        r.overlapped += st.overlappedSeconds;
        r.reducerComm += st.commSeconds;
      }
    }
  }

  // -c checked steps per mode (but none), then the optimizer modes' parameters.
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
        wrong = checksGrads(mode) ? ex_.sum(wrongGrads(mode)) : 0;
      }
      results_[m].wrong = wrong;
    }
    std::vector<size_t> optimizerModes;
    for (size_t m = 0; m < o_.modes.size(); ++m) {
      if (checksParams(o_.modes[m])) optimizerModes.push_back(m);
    }
    const std::vector<int64_t> wrong = wrongParams(optimizerModes);
    for (size_t k = 0; k < optimizerModes.size(); ++k) {
      results_[optimizerModes[k]].wrong += ex_.sum(wrong[k]);
    }
  }

  // The table rows (every rank must call: it exchanges the per-step times).
  std::vector<StepRow> rows() {
    std::vector<StepRow> rows;
    double noneMed = std::nan("");
    for (size_t m = 0; m < o_.modes.size(); ++m) {
      const StepMode mode = o_.modes[m];
      const ModeResult& r = results_[m];
      const std::vector<double> step = slowestRank(r.step);
      const std::vector<double> comm = slowestRank(r.comm);
      const double overlapped = sumOverRanks(r.overlapped);
      const double reducerComm = sumOverRanks(r.reducerComm);
      StepRow row;
      row.mode = stepModeName(mode);
      row.stepMinMs = *std::min_element(step.begin(), step.end()) * 1e3;
      row.stepMedMs = median(step) * 1e3;
      if (mode == StepMode::kNone) noneMed = row.stepMedMs;
      row.wrong = r.wrong;
      if (mode != StepMode::kNone) {
        const double commMed = median(comm);
        row.commMs = commMed * 1e3;
        row.busBw = commMed > 0
                        ? 2.0 * (n_ - 1) / n_ * static_cast<double>(o_.modelBytes) / commMed / 1e9
                        : 0.0;
      }
      if (isDdp(mode)) row.overlapPct = reducerComm > 0 ? 100.0 * overlapped / reducerComm : 0.0;
      rows.push_back(row);
    }
    for (StepRow& row : rows) row.exposedMs = row.stepMedMs - noneMed;  // NaN without none
    return rows;
  }

  // Every rank must call (ZeRO's local bytes are exchanged).
  StateBytes stateBytes() {
    StateBytes s;
    s.ddp = optim::FlatOptimizer(optimizer_, 0).numSlots() * model_.numel() * sizeof(float);
    s.zeroFull = zero_->fullStateBytes();
    s.zeroMin = s.zeroFull;
    for (const std::string& v : ex_.allgather(std::to_string(zero_->localStateBytes()))) {
      const size_t b = std::stoull(v);
      s.zeroMax = std::max(s.zeroMax, b);
      s.zeroMin = std::min(s.zeroMin, b);
    }
    return s;
  }

  const optim::OptimizerOptions& optimizer() const { return optimizer_; }
  double computeUsPerLayer() const { return computeUsPerLayer_; }
  double targetUsPerLayer() const { return targetUs_; }
  const KernelSpeed& kernelSpeed() const { return speed_; }
  size_t extraUpdatesPerLayer() const { return extraUpdates_; }
  double flatAllreduceSec() const { return flatAllreduceSec_; }
  void shutdown() { world_->shutdown(); }

 private:
  void barrier() { world_->barrier()->wait(timeout_); }

  float* grad(StepMode mode, size_t layer) {
    if (mode == StepMode::kDdpView) return ddpView_->gradView(layer).ptr<float>();
    return model_.layerGrad(layer);
  }
  float* params(StepMode mode) {
    if (mode == StepMode::kZero) return zeroData_.data();
    if (mode == StepMode::kZeroOwner) return zeroOwnerData_.data();
    return model_.data.data();
  }
  uint64_t optimizerSteps(StepMode mode) const {
    if (mode == StepMode::kZero) return zero_->steps();
    if (mode == StepMode::kZeroOwner) return zeroOwner_->steps();
    return ddpOptimizer_->steps();
  }

  // One step of `mode`; the Reducer's stats for the ddp modes.
  ddp::IterationStats step(StepMode mode) {
    ddp::Reducer* reducer = mode == StepMode::kDdpView ? ddpView_.get()
                            : isDdp(mode)              ? ddp_.get()
                                                       : nullptr;
    zero::ShardedOptimizer* sharded = mode == StepMode::kZero        ? zero_.get()
                                      : mode == StepMode::kZeroOwner ? zeroOwner_.get()
                                                                     : nullptr;
    for (size_t l = o_.layers; l-- > 0;) {
      layerBackward(grad(mode, l), o_.paramsPerLayer, extraUpdates_, rank_, l);
      if (reducer) reducer->markReady(l);
      if (sharded) sharded->markReady(l);
    }
    ddp::IterationStats st;
    if (reducer) st = reducer->finalize();
    if (mode == StepMode::kDdpOpt) ddpOptimizer_->step(model_.data.data(), model_.grad.data());
    if (sharded) sharded->step();
    if (mode == StepMode::kFlat) flatAllreduce();
    return st;
  }

  // flat: copy in, one allreduce, average, copy out.
  void flatAllreduce() {
    const size_t per = o_.paramsPerLayer;
    for (size_t l = 0; l < o_.layers; ++l)
      ops_->copy(flat_.view(l), tensorOf(model_.layerGrad(l), per));
    pg_->allreduce(flat_.tensor(), AllreduceOptions{ReduceOp::SUM, timeout_})->wait(timeout_);
    ops_->divide(flat_.tensor(), n_);
    for (size_t l = 0; l < o_.layers; ++l)
      ops_->copy(tensorOf(model_.layerGrad(l), per), flat_.view(l));
  }

  // One allreduce of the whole model, alone: median of 3 after one warm-up, slowest rank.
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

  // This rank's wrong averaged gradients after a step of `mode`.
  int64_t wrongGrads(StepMode mode) {
    if (inject_) grad(mode, 0)[0] += 1.0f;
    int64_t wrong = 0;
    for (size_t l = 0; l < o_.layers; ++l) {
      const float* g = grad(mode, l);
      for (size_t i = 0; i < o_.paramsPerLayer; ++i) wrong += g[i] != expectedMean(n_, l, i);
    }
    return wrong;
  }

  // This rank's wrong parameters in each of o_.modes[modes[k]] (optimizer modes), against an
  // unsharded optimizer's, computed once per layer and step count. Adam's arithmetic is the same
  // per element wherever it runs, but the compiler may contract a multiply-add differently in two
  // loops: a relative 1e-5 allows for that, not for a missed or doubled step.
  std::vector<int64_t> wrongParams(const std::vector<size_t>& modes) {
    std::vector<int64_t> wrong(modes.size(), 0);
    std::vector<float*> p;
    std::vector<uint64_t> steps;
    for (size_t m : modes) {
      p.push_back(params(o_.modes[m]));
      steps.push_back(optimizerSteps(o_.modes[m]));
      if (inject_) p.back()[0] += 1.0f;
    }
    const size_t per = o_.paramsPerLayer;
    for (size_t l = 0; l < o_.layers; ++l) {
      std::map<uint64_t, std::vector<float>> want;  // by step count
      for (size_t k = 0; k < modes.size(); ++k) {
        auto it = want.find(steps[k]);
        if (it == want.end()) {
          it = want.emplace(steps[k], referenceParameters(optimizer_, l, per, n_, steps[k])).first;
        }
        const float* got = p[k] + l * per;
        for (size_t i = 0; i < per; ++i) {
          const float w = it->second[i];
          wrong[k] += !(std::fabs(got[i] - w) <= 1e-5f * std::max(1.0f, std::fabs(w)));
        }
      }
    }
    return wrong;
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

  double sumOverRanks(double mine) { return ex_.combine(mine, TimeCombine::kAverage) * n_; }

  const DdpStepOptions& o_;
  const Milliseconds timeout_;
  const std::shared_ptr<ProcessGroup> world_;
  const std::shared_ptr<TimedGroup> pg_;  // the modes' collectives go through it
  const int rank_;
  const int n_;
  RankExchange ex_;
  std::shared_ptr<layers::DeviceOps> ops_;
  bool inject_ = false;
  optim::OptimizerOptions optimizer_;

  SyntheticModel model_;     // parameters (ddp modes) and gradients (all but ddp-view)
  layers::FlatBuffer flat_;  // flat, and the calibration's allreduce
  std::vector<float> zeroData_, zeroOwnerData_;  // each ZeRO optimizer's parameters
  std::unique_ptr<ddp::Reducer> ddp_, ddpView_;  // ddp and ddp+opt share one
  std::unique_ptr<optim::FlatOptimizer> ddpOptimizer_;
  std::unique_ptr<zero::ShardedOptimizer> zero_, zeroOwner_;

  KernelSpeed speed_;
  size_t extraUpdates_ = 0;
  double targetUs_ = 0, computeUsPerLayer_ = 0, flatAllreduceSec_ = 0;
  std::vector<ModeResult> results_;
};

std::string timeNow() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// null for N/A (negative, or NaN).
nlohmann::json orNull(double v) {
  return std::isnan(v) || v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
}

void writeJson(const std::string& path, nlohmann::json doc) {
  std::ofstream f(path, std::ios::trunc);
  f << doc.dump(2) << "\n";
  f.close();
  C10D_CHECK(!f.fail(), "ddp_step_perf: cannot write the JSON file '", path, "'");
}

int run(int argc, char** argv, const std::string& program, const DdpStepOptions& o) {
  const std::string start = timeNow();
  const LaunchInfo launch = detectLaunch();
  PerfOptions po;
  po.backend = o.backend;
  po.timeoutSec = o.timeoutSec;
  std::shared_ptr<ProcessGroup> world = createWorld(launch, po);
  Bench b(o, world);
  std::string modes;
  for (StepMode m : o.modes) modes += std::string(modes.empty() ? "" : ",") + stepModeName(m);
  b.print(detail::str("# DDP step test starting: ", program, "\n"));
  b.print(detail::str("# c10d version ", C10D_VERSION, " backend ", world->backendName(),
                      " device cpu world size ", world->size(), " launcher ", launch.launcher,
                      "\n"));
  b.print(detail::str("# model ", mib(static_cast<double>(o.modelBytes)), " fp32: ", o.layers,
                      " layers x ", o.paramsPerLayer, " parameters (one tensor per layer); ",
                      b.optimizer().describe(), "\n"));
  b.print(detail::str("# warmup iters: ", o.warmupIters, " iters: ", o.iters,
                      " validation: ", o.check, " modes: ", modes,
                      " (interleaved, order rotated every iteration)\n"));
  b.print("#\n# Using devices\n");
  const std::vector<std::string> lines =
      b.exchange().allgather(rankLine(world->rank(), 0, static_cast<int>(getpid()), hostName(), 0,
                                      describeDevice(Device::cpu()), world->describe()));
  for (const auto& l : lines) b.print(l);
  b.print("#\n");

  b.setUp();
  b.print(b.calibrate());
  b.run();
  b.print(b.bucketLine());
  b.check();
  const std::vector<StepRow> rows = b.rows();
  const StateBytes state = b.stateBytes();
  b.print("#\n" + stepTableHeader());
  int64_t wrong = 0;
  for (const StepRow& r : rows) {
    b.print(stepTableRow(r));
    wrong += std::max<int64_t>(0, r.wrong);
  }
  const std::string algo = optim::algorithmName(o.optimizer);
  b.print(detail::str(
      "#\n# optimizer state per rank (", algo, ", ", b.optimizer().slotNames().size(),
      " slots): ddp ", mib(static_cast<double>(state.ddp)),
      " (the full state on every rank); zero ", mib(static_cast<double>(state.zeroMax)),
      " largest, ", mib(static_cast<double>(state.zeroMin)), " smallest shard at world size ",
      world->size(), " (",
      fixed(state.zeroMax > 0 ? static_cast<double>(state.zeroFull) / state.zeroMax : 0.0, 2),
      "x less; full ", mib(static_cast<double>(state.zeroFull)), ")\n"));
  b.print(detail::str("# Out of bounds values : ", wrong, wrong ? " FAILED" : " OK", "\n"));
  b.print(detail::str("#\n# DDP step test concluded: ", program, "\n#\n"));

  if (b.isMain() && !o.jsonPath.empty()) {
    nlohmann::json doc;
    doc["program"] = program;
    doc["version"] = C10D_VERSION;
    doc["start_time"] = start;
    doc["args"] = std::vector<std::string>(argv, argv + argc);
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
        {"optimizer", b.optimizer().describe()},
        {"iterations", o.iters},
        {"warmup_iterations", o.warmupIters},
        {"check", o.check},
        {"modes", modes},
        {"compute_us_per_layer", b.computeUsPerLayer()},
        {"compute_target_us_per_layer", b.targetUsPerLayer()},
        {"compute_ratio", o.computeUsPerLayer < 0 ? orNull(o.computeRatio) : nullptr},
        {"flat_allreduce_ms",
         o.computeUsPerLayer < 0 ? orNull(b.flatAllreduceSec() * 1e3) : nullptr},
        {"kernel_pass_ns_per_element", b.kernelSpeed().passNs},
        {"kernel_write_ns_per_element", b.kernelSpeed().writeNs},
        {"extra_updates_per_layer", b.extraUpdatesPerLayer()},
    };
    doc["results"] = nlohmann::json::array();
    for (const StepRow& r : rows) {
      doc["results"].push_back(
          {{"mode", r.mode},
           {"step_ms_min", r.stepMinMs},
           {"step_ms_median", r.stepMedMs},
           {"exposed_ms",
            std::isnan(r.exposedMs) ? nlohmann::json(nullptr) : nlohmann::json(r.exposedMs)},
           {"comm_ms", orNull(r.commMs)},
           {"overlap_pct", orNull(r.overlapPct)},
           {"bus_bw", orNull(r.busBw)},
           {"nwrong", r.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.wrong)}});
    }
    doc["optimizer_state"] = {{"optimizer", algo},
                              {"ddp_bytes_per_rank", state.ddp},
                              {"zero_full_bytes", state.zeroFull},
                              {"zero_max_bytes_per_rank", state.zeroMax},
                              {"zero_min_bytes_per_rank", state.zeroMin}};
    doc["out_of_bounds"] = wrong;
    doc["end_time"] = timeNow();
    writeJson(o.jsonPath, doc);
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
