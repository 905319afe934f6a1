#include "perf/common/ddp_step_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/layers/common/memory.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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
  return m == StepMode::kDdpOpt || isZero(m) || m == StepMode::kZero3;
}

}  // namespace

DdpStepBench::DdpStepBench(const DdpStepOptions& o, std::shared_ptr<ProcessGroup> world)
    : o_(o),
      timeout_(static_cast<int64_t>(o.timeoutSec) * 1000),
      world_(std::move(world)),
      pg_(std::make_shared<TimedGroup>(world_)),
      rank_(world_->rank()),
      n_(world_->size()),
      ex_(world_->store(), rank_, n_),
      ops_(layers::cpuDeviceOps()),
      model_(o.layers, o.paramsPerLayer) {
  rss_.begin("start-up");
  const char* inject = std::getenv("C10D_PERF_INJECT_ERROR");
  inject_ = inject != nullptr && std::atoi(inject) != 0 && rank_ == n_ - 1;
  optimizer_.algorithm = o.optimizer;
}

bool DdpStepBench::uses(StepMode m) const {
  return std::find(o_.modes.begin(), o_.modes.end(), m) != o_.modes.end();
}

std::vector<DdpStepBench::Holder> DdpStepBench::holders(StepMode m) const {
  switch (m) {
    case StepMode::kNone:
      return {};
    case StepMode::kFlat:
      return {kFlatBuffer};
    case StepMode::kDdp:
      return {kDdpReducer};
    case StepMode::kDdpView:
      return {kDdpViewReducer};
    case StepMode::kDdpOpt:
      return {kDdpReducer, kDdpOptimizer};
    case StepMode::kZero:
      return {kZeroOpt};
    case StepMode::kZeroOwner:
      return {kZeroOwnerOpt};
    case StepMode::kZero3:
      return {kFsdp};
  }
  return {};
}

int64_t DdpStepBench::heldBytes(StepMode m) const {
  int64_t bytes = 0;
  for (Holder h : holders(m)) bytes += held_[h];
  return bytes;
}

template <typename Fn>
void DdpStepBench::counted(Holder h, Fn&& build) {
  const int64_t before = layers::layerMemory().liveBytes;
  build();
  held_[h] += layers::layerMemory().liveBytes - before;
}

// What each mode needs; the Reducers and ZeRO optimizers are collective to build.
void DdpStepBench::setUp() {
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
    counted(kFlatBuffer, [&] {
      flat_ = layers::FlatBuffer(DataType::kFloat32, Device::cpu(),
                                 std::vector<size_t>(o_.layers, per), *ops_);
    });
  }
  ddp::ReducerOptions ro;
  ro.bucketCapBytes = o_.bucketCapBytes;
  ro.firstBucketBytes = o_.firstBucketBytes;
  ro.timeout = timeout_;
  if (uses(StepMode::kDdp) || uses(StepMode::kDdpOpt)) {
    counted(kDdpReducer,
            [&] { ddp_ = std::make_unique<ddp::Reducer>(params(model_.data.data()), pg_, ro); });
  }
  if (uses(StepMode::kDdpOpt)) {
    counted(kDdpOptimizer, [&] {
      ddpOptimizer_ = std::make_unique<optim::FlatOptimizer>(optimizer_, model_.numel());
    });
  }
  if (uses(StepMode::kDdpView)) {
    ro.gradientAsBucketView = true;
    counted(kDdpViewReducer, [&] {
      ddpView_ = std::make_unique<ddp::Reducer>(params(model_.data.data()), pg_, ro);
    });
  }
  // zero always exists: it reports the sharded state bytes. Each ZeRO optimizer steps its own
  // copy of the parameters (they share the gradients).
  zero::ZeroOptions zo;
  zo.optimizer = optimizer_;
  zo.bucketCapBytes = o_.bucketCapBytes;
  zo.timeout = timeout_;
  zeroData_.resize(model_.numel());
  initParameters(zeroData_.data(), o_.layers, per);
  counted(kZeroOpt, [&] {
    zero_ = std::make_unique<zero::ShardedOptimizer>(params(zeroData_.data()), pg_, zo);
  });
  if (uses(StepMode::kZeroOwner)) {
    zo.gradReduction = zero::ZeroOptions::GradReduction::kReduceToOwner;
    zeroOwnerData_.resize(model_.numel());
    initParameters(zeroOwnerData_.data(), o_.layers, per);
    counted(kZeroOwnerOpt, [&] {
      zeroOwner_ = std::make_unique<zero::ShardedOptimizer>(params(zeroOwnerData_.data()), pg_, zo);
    });
  }
  // zero3: one unit per layer. The model keeps its shard of the initial values, so the full
  // array lives only until it is built, as a framework would free it.
  if (uses(StepMode::kZero3)) {
    std::vector<float> init(model_.numel());
    initParameters(init.data(), o_.layers, per);
    std::vector<std::vector<layers::Parameter>> units;
    for (size_t l = 0; l < o_.layers; ++l) {
      units.push_back(
          {{detail::str("layer", l, ".weight"), tensorOf(init.data() + l * per, per), Tensor()}});
    }
    zero::FsdpOptions fo;
    fo.optimizer = optimizer_;
    fo.timeout = timeout_;
    counted(kFsdp,
            [&] { fsdp_ = std::make_unique<zero::FullyShardedModel>(std::move(units), pg_, fo); });
  }
}

// Sets extraUpdates_ (work per layer beyond the gradient write); returns the header line.
std::string DdpStepBench::calibrate() {
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
    how = detail::str("calibrated: ", formatFixed(o_.computeRatio, 2),
                      " x one allreduce of the whole model (",
                      formatFixed(flatAllreduceSec_ * 1e3, 3), " ms)");
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
std::string DdpStepBench::bucketLine() const {
  const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
  if (!r) return "";
  std::string line = detail::str("# reducer: bucket cap ", formatMiB(o_.bucketCapBytes),
                                 ", first bucket ", formatMiB(o_.firstBucketBytes), " -> ");
  line += detail::str(r->buckets().size(), " buckets (MiB, launch order):");
  for (size_t bytes : bucketBytes()) line += " " + formatFixed(bytes / (1024.0 * 1024.0), 2);
  return line + "\n";
}

std::vector<size_t> DdpStepBench::bucketBytes() const {
  std::vector<size_t> out;
  const ddp::Reducer* r = ddp_ ? ddp_.get() : ddpView_.get();
  if (r) {
    for (const auto& b : r->buckets()) out.push_back(b.bytes);
  }
  return out;
}

// -w untimed, then -n timed iterations; each runs every mode once, in a rotating order.
void DdpStepBench::run() {
  results_.assign(o_.modes.size(), ModeResult{});
  rss_.begin("steps");
  const int total = o_.warmupIters + o_.iters;
  for (int it = 0; it < total; ++it) {
    for (size_t k = 0; k < o_.modes.size(); ++k) {
      const size_t m = (k + static_cast<size_t>(it)) % o_.modes.size();
      const StepMode mode = o_.modes[m];
      barrier();
      pg_->reset();
      // The mode's memory: its objects' bytes before the step, plus the step's rise above the
      // bytes live before it; what the step leaves allocated (a rebuild) stays charged to it.
      const int64_t held = heldBytes(mode);
      const int64_t live = layers::layerMemory().liveBytes;
      layers::resetLayerMemoryPeak();
      const int64_t rssBefore = rss_.restartPeak();
      const auto t0 = Clock::now();
      const StepStats st = step(mode);
      const double sec = secondsSince(t0);
      const int64_t rssPeak = layers::processMemory().peakBytes;
      rss_.sample();
      const layers::LayerMemory after = layers::layerMemory();
      const std::vector<Holder> hs = holders(mode);
      if (!hs.empty()) held_[hs.front()] += after.liveBytes - live;
      const int64_t peak = held + std::max(after.peakBytes, st.layerPeakBytes) - live;
      const TimedGroup::Timeline tl = pg_->collect(timeout_);
      if (it < o_.warmupIters) continue;
      ModeResult& r = results_[m];
      r.step.push_back(sec);
      r.comm.push_back(tl.busySeconds);
      r.overlapped += st.reducer.overlappedSeconds;
      r.reducerComm += st.reducer.commSeconds;
      r.peakBytes = std::max(r.peakBytes, peak);
      r.liveBytes = heldBytes(mode);
      if (rssBefore >= 0 && rssPeak >= 0) r.rssRise = std::max(r.rssRise, rssPeak - rssBefore);
    }
  }
}

// -c checked steps per mode (but none), then the optimizer modes' parameters.
void DdpStepBench::check() {
  if (o_.check == 0) return;
  rss_.begin("check");
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
  if (fsdp_) {  // zero3's full parameters exist only in its shards: gathered (collective)
    fsdpCheck_.assign(model_.numel(), 0.0f);
    std::vector<Tensor> views;
    for (size_t l = 0; l < o_.layers; ++l) {
      views.push_back(tensorOf(fsdpCheck_.data() + l * o_.paramsPerLayer, o_.paramsPerLayer));
    }
    fsdp_->gatherParameters(views);
  }
  const std::vector<int64_t> wrong = wrongParams(optimizerModes);
  for (size_t k = 0; k < optimizerModes.size(); ++k) {
    results_[optimizerModes[k]].wrong += ex_.sum(wrong[k]);
  }
}

// The table rows (every rank must call: it exchanges the per-step times).
std::vector<StepRow> DdpStepBench::rows() {
  std::vector<StepRow> rows;
  double noneMed = std::nan("");
  for (size_t m = 0; m < o_.modes.size(); ++m) {
    const StepMode mode = o_.modes[m];
    const ModeResult& r = results_[m];
    // A step ends when its slowest rank does. A rank's comm time includes waiting for the ranks
    // that reach a collective after it; the last to arrive waits for nobody: the smallest.
    const std::vector<double> step = acrossRanks(r.step, /*maximum=*/true);
    const std::vector<double> comm = acrossRanks(r.comm, /*maximum=*/false);
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
    row.peakBytes = maxOverRanks(r.peakBytes);
    row.liveBytes = maxOverRanks(r.liveBytes);
    row.rssRiseBytes = maxOverRanks(r.rssRise);
    rows.push_back(row);
  }
  for (StepRow& row : rows) row.exposedMs = row.stepMedMs - noneMed;  // NaN without none
  return rows;
}

// Every rank must call (ZeRO's local bytes are exchanged).
StateBytes DdpStepBench::stateBytes() {
  StateBytes s;
  s.ddp = optim::FlatOptimizer(optimizer_, 0).numSlots() * model_.numel() * sizeof(float);
  s.zeroFull = zero_->fullStateBytes();
  s.zeroMin = s.zeroFull;
  for (const std::string& v : ex_.allgather(std::to_string(zero_->localStateBytes()))) {
    const size_t b = std::stoull(v);
    s.zeroMax = std::max(s.zeroMax, b);
    s.zeroMin = std::min(s.zeroMin, b);
  }
  if (fsdp_) {
    s.zero3State = fsdp_->localStateBytes();
    s.zero3Shards = 2 * fsdp_->localNumel() * sizeof(float);
  }
  return s;
}

void DdpStepBench::barrier() {
  world_->barrier()->wait(timeout_);
}

float* DdpStepBench::grad(StepMode mode, size_t layer) {
  if (mode == StepMode::kDdpView) return ddpView_->gradView(layer).ptr<float>();
  return model_.layerGrad(layer);
}

float* DdpStepBench::params(StepMode mode) {
  if (mode == StepMode::kZero) return zeroData_.data();
  if (mode == StepMode::kZeroOwner) return zeroOwnerData_.data();
  if (mode == StepMode::kZero3) return fsdpCheck_.data();
  return model_.data.data();
}

uint64_t DdpStepBench::optimizerSteps(StepMode mode) const {
  if (mode == StepMode::kZero) return zero_->steps();
  if (mode == StepMode::kZeroOwner) return zeroOwner_->steps();
  if (mode == StepMode::kZero3) return fsdp_->steps();
  return ddpOptimizer_->steps();
}

// One step of `mode`.
DdpStepBench::StepStats DdpStepBench::step(StepMode mode) {
  StepStats st;
  if (mode == StepMode::kZero3) {
    st.layerPeakBytes = static_cast<int64_t>(fullyShardedStep().layerPeakBytes);
    return st;
  }
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
  if (reducer) st.reducer = reducer->finalize();
  if (mode == StepMode::kDdpOpt) ddpOptimizer_->step(model_.data.data(), model_.grad.data());
  if (sharded) sharded->step();
  if (mode == StepMode::kFlat) flatAllreduce();
  return st;
}

// zero3. Forward gathers each unit in turn and keeps the last one for backward; no mode computes
// a forward (the synthetic model has none), so nothing hides these gathers. Backward, last layer
// first: the unit gathered again (the one before prefetched), its gradient written into the
// unit's full gradient, reduce-scattered while the next layer computes; then the shard's step.
zero::FsdpStepStats DdpStepBench::fullyShardedStep() {
  for (size_t l = 0; l < o_.layers; ++l) {
    fsdp_->unshard(l, zero::Pass::kForward);
    if (l + 1 < o_.layers) fsdp_->reshard(l);
  }
  for (size_t l = o_.layers; l-- > 0;) {
    fsdp_->unshard(l, zero::Pass::kBackward);
    layerBackward(fsdp_->grads(l)[0].ptr<float>(), o_.paramsPerLayer, extraUpdates_, rank_, l);
    fsdp_->reduceGrads(l);
  }
  return fsdp_->step();
}

// flat: copy in, one allreduce, average, copy out.
void DdpStepBench::flatAllreduce() {
  const size_t per = o_.paramsPerLayer;
  for (size_t l = 0; l < o_.layers; ++l)
    ops_->copy(flat_.view(l), tensorOf(model_.layerGrad(l), per));
  pg_->allreduce(flat_.tensor(), AllreduceOptions{ReduceOp::SUM, timeout_})->wait(timeout_);
  ops_->divide(flat_.tensor(), n_);
  for (size_t l = 0; l < o_.layers; ++l)
    ops_->copy(tensorOf(model_.layerGrad(l), per), flat_.view(l));
}

// One allreduce of the whole model, alone: median of 3 after one warm-up, slowest rank.
double DdpStepBench::timeFlatAllreduce() {
  std::vector<double> t;
  for (int i = 0; i < 4; ++i) {
    barrier();
    const auto t0 = Clock::now();
    world_->allreduce(flat_.tensor(), AllreduceOptions{ReduceOp::SUM, timeout_})->wait(timeout_);
    if (i > 0) t.push_back(secondsSince(t0));
  }
  return ex_.combine(median(t), TimeCombine::kMax);
}

// This rank's wrong averaged gradients after a step of `mode`: exact, but within 4 ulps for the
// Reducer's scale-then-sum (synthetic_model.h); a wiring fault (a missing 1/n, a stale or doubled
// gradient) is off by far more.
int64_t DdpStepBench::wrongGrads(StepMode mode) {
  if (inject_) grad(mode, 0)[0] += 1.0f;
  const bool reducer =
      mode == StepMode::kDdp || mode == StepMode::kDdpView || mode == StepMode::kDdpOpt;
  const float ulps = reducer ? 4.0f : 0.0f;
  int64_t wrong = 0;
  for (size_t l = 0; l < o_.layers; ++l) {
    const float* g = grad(mode, l);
    for (size_t i = 0; i < o_.paramsPerLayer; ++i) {
      const float want = expectedMean(n_, l, i);
      const float ulp = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
      wrong += !(std::fabs(g[i] - want) <= ulps * ulp);
    }
  }
  return wrong;
}

// This rank's wrong parameters in each of o_.modes[modes[k]] (optimizer modes), against an
// unsharded optimizer's, computed once per layer and step count. Adam's arithmetic is the same
// per element wherever it runs, but the compiler may contract a multiply-add differently in two
// loops: a relative 1e-5 allows for that, not for a missed or doubled step.
std::vector<int64_t> DdpStepBench::wrongParams(const std::vector<size_t>& modes) {
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

// Per step, the maximum (or minimum) over ranks of `mine` (same length on every rank).
std::vector<double> DdpStepBench::acrossRanks(const std::vector<double>& mine, bool maximum) {
  const std::string bytes(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(double));
  std::vector<double> out(mine);
  int r = 0;
  for (const std::string& s : ex_.allgather(bytes)) {
    C10D_CHECK_EQ(s.size(), bytes.size(), "ddp_step_perf: per-step times from rank ", r);
    for (size_t i = 0; i < out.size(); ++i) {
      double v = 0;
      std::memcpy(&v, s.data() + i * sizeof(double), sizeof(double));
      out[i] = maximum ? std::max(out[i], v) : std::min(out[i], v);
    }
    ++r;
  }
  return out;
}

layers::RssPhases DdpStepBench::processMemory() {
  rss_.end();
  layers::RssPhases out = rss_;
  for (layers::RssPhases::Phase& p : out.phases()) {
    p.peakBytes = maxOverRanks(p.peakBytes);
    p.sampledMaxBytes = maxOverRanks(p.sampledMaxBytes);
    p.lastBytes = maxOverRanks(p.lastBytes);
  }
  return out;
}

int64_t DdpStepBench::maxOverRanks(int64_t mine) {
  int64_t out = mine;
  for (const std::string& v : ex_.allgather(std::to_string(mine))) {
    out = std::max<int64_t>(out, std::stoll(v));
  }
  return out;
}

double DdpStepBench::sumOverRanks(double mine) {
  return ex_.combine(mine, TimeCombine::kAverage) * n_;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
