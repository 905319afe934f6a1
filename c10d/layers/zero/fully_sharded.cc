// FullyShardedModel (ZeRO-3): construction, the unit gathers and gradient reductions, the step and
// the checkpoint state. The contract is in fully_sharded.h.
#include "c10d/layers/zero/fully_sharded.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/core/broadcast_coalesced.h"
#include "c10d/layers/zero/start_up.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::shared_ptr<ProcessGroup> checkedGroup(std::shared_ptr<ProcessGroup> group) {
  C10D_CHECK_ARG(group != nullptr, "FullyShardedModel: null process group");
  return group;
}

// A 63-bit FNV-1a of the unit layout (parameters per unit), compared across ranks.
int64_t layoutFingerprint(const std::vector<std::vector<size_t>>& units) {
  uint64_t h = kFnv1aShortBasis;  // FNV-1a over the units' sizes as whole words
  for (const auto& u : units) h = (h ^ u.size()) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

}  // namespace

FullyShardedModel::FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                                     std::shared_ptr<ProcessGroup> group, FsdpOptions options)
    : group_(checkedGroup(std::move(group))),
      options_(std::move(options)),
      rank_(group_->rank()),
      size_(group_->size()) {
  setUp(std::move(units), nullptr);
}

FullyShardedModel::FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                                     std::shared_ptr<ProcessGroup> group, FsdpOptions options,
                                     const UnitInit& init)
    : group_(checkedGroup(std::move(group))),
      options_(std::move(options)),
      rank_(group_->rank()),
      size_(group_->size()) {
  C10D_CHECK_ARG(init != nullptr, "FullyShardedModel: null UnitInit (group ", group_->name(), ")");
  setUp(std::move(units), &init);
}

FullyShardedModel::FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                                     std::shared_ptr<ProcessGroup> group, FsdpOptions options,
                                     const ShardSource& source)
    : group_(checkedGroup(std::move(group))),
      options_(std::move(options)),
      rank_(group_->rank()),
      size_(group_->size()) {
  C10D_CHECK_ARG(source.read != nullptr, "FullyShardedModel: null ShardSource::read (group ",
                 group_->name(), ")");
  setUp(std::move(units), nullptr, &source);
}

void FullyShardedModel::setUp(std::vector<std::vector<layers::Parameter>> units,
                              const UnitInit* init, const ShardSource* source) {
  std::string problem;
  for (size_t u = 0; u < units.size(); ++u) {
    if (units[u].empty() && problem.empty()) {
      problem = "unit " + std::to_string(u) + " has no parameters";
    }
    unitParams_.emplace_back();
    for (layers::Parameter& p : units[u]) {
      unitParams_.back().push_back(params_.size());
      params_.push_back(std::move(p));
    }
  }
  StartUpCheck check;
  check.layer = "FullyShardedModel";
  check.params = &params_;
  check.checkGrads = false;
  check.checkData = init == nullptr && source == nullptr;
  check.optimizer = &options_.optimizer;
  try {
    optim::validateGroups(options_.paramGroups, params_.size());
    validate(options_.clip, "FsdpOptions::clip");
  } catch (const InvalidArgument& e) {
    if (problem.empty()) problem = e.what();
  }
  check.optionsProblem = problem;
  check.settings.push_back(
      {"the number of units", static_cast<int64_t>(unitParams_.size()), nullptr});
  check.settings.push_back({"the units' parameter counts", layoutFingerprint(unitParams_),
                            [](int64_t) { return std::string("another layout"); }});
  check.settings.push_back({"FsdpOptions::prefetch", options_.prefetch ? 1 : 0,
                            [](int64_t v) { return std::string(v ? "true" : "false"); }});
  addSharedSettings(check, options_.paramGroups, options_.clip, "FsdpOptions");
  check.timeout = options_.timeout;
  verifyAcrossRanks(*group_, check);

  if (init == nullptr && source == nullptr && size_ > 1 && !params_.empty()) {
    std::vector<Tensor> tensors;
    for (const layers::Parameter& p : params_) tensors.push_back(p.data);
    broadcastCoalesced(*group_, tensors, kDefaultBroadcastBucketBytes, 0)->wait(options_.timeout);
  }

  // The layout: each unit's flat parameter, split in N chunks of C_u.
  const auto n = static_cast<size_t>(size_);
  unitOf_.assign(params_.size(), 0);
  unitOffset_.assign(params_.size(), 0);
  for (size_t u = 0; u < unitParams_.size(); ++u) {
    size_t numel = 0;
    for (size_t p : unitParams_[u]) {
      unitOf_[p] = u;
      unitOffset_[p] = numel;
      numel += params_[p].data.numel;
    }
    unitNumels_.push_back(numel);
    unitChunk_.push_back((numel + n - 1) / n);
    unitShardOffset_.push_back(local_);
    local_ += unitChunk_.back();
  }

  const std::vector<optim::Span> each =
      groupOfEach(options_.paramGroups, params_.size(), options_.optimizer);
  for (size_t u = 0; u < unitParams_.size(); ++u) {
    const size_t begin = static_cast<size_t>(rank_) * unitChunk_[u];
    forEachRun(u, begin, begin + unitChunk_[u], [&](size_t p, size_t, size_t count, size_t at) {
      const size_t from = unitShardOffset_[u] + (at - begin);
      optim::appendSpan(spans_, from, from + count, each[p].lr, each[p].weightDecay);
    });
  }

  MutexLock lock(mu_);
  events_.enable(options_.recordComm);
  units_.resize(unitParams_.size());
  shardParam_ = std::make_shared<layers::Floats>(local_, 0.0f);
  shardGrad_ = std::make_shared<layers::Floats>(local_, 0.0f);
  optimizer_ = std::make_unique<optim::FlatOptimizer>(options_.optimizer, local_);
  if (init != nullptr) {
    for (size_t u = 0; u < unitParams_.size(); ++u) initUnit(u, *init);
  } else if (source != nullptr) {
    float* shard = shardParam_->data();
    forEachLocalRun([&](size_t p, size_t pos, size_t count, size_t at) {
      source->read(p, pos, count, shard + at);
    });
  } else {
    std::vector<Tensor> initial;
    for (const layers::Parameter& p : params_) initial.push_back(p.data);
    takeShard(initial, shardParam_->data());
  }
  // The framework's views are not kept: it may free them now.
  for (layers::Parameter& p : params_) {
    p.data = Tensor(nullptr, p.data.numel, DataType::kFloat32);
    p.grad = Tensor();
  }
}

FullyShardedModel::~FullyShardedModel() = default;

void FullyShardedModel::initUnit(size_t unit, const UnitInit& init) {
  layers::Floats full(unitNumels_[unit], 0.0f);
  init(unit, viewsOf(unit, full));
  if (size_ > 1 && !full.empty()) {
    try {
      group_->broadcast(tensorOf(full.data(), full.size()), BroadcastOptions{0, options_.timeout})
          ->wait(options_.timeout);
    } catch (...) {
      broken_.fail("the start-up broadcast of " + describe(unit), std::current_exception());
    }
  }
  const size_t begin = static_cast<size_t>(rank_) * unitChunk_[unit];
  const size_t end = std::min(begin + unitChunk_[unit], full.size());
  if (end > begin) {
    std::copy(full.data() + begin, full.data() + end, shardParam_->data() + unitShardOffset_[unit]);
  }
}

void FullyShardedModel::takeShard(const std::vector<Tensor>& values, float* shard) const {
  forEachLocalRun([&](size_t p, size_t pos, size_t count, size_t at) {
    std::memcpy(shard + at, values[p].ptr<float>() + pos, count * sizeof(float));
  });
}

template <typename Fn>
void FullyShardedModel::forEachLocalRun(Fn&& fn) const {
  for (size_t u = 0; u < unitParams_.size(); ++u) {
    const size_t begin = static_cast<size_t>(rank_) * unitChunk_[u];
    forEachRun(u, begin, begin + unitChunk_[u], [&](size_t p, size_t pos, size_t count, size_t at) {
      fn(p, pos, count, unitShardOffset_[u] + (at - begin));
    });
  }
}

template <typename Fn>
void FullyShardedModel::forEachRun(size_t unit, size_t begin, size_t end, Fn&& fn) const {
  for (size_t p : unitParams_[unit]) {
    const size_t lo = std::max(begin, unitOffset_[p]);
    const size_t hi = std::min(end, unitOffset_[p] + params_[p].data.numel);
    if (hi > lo) fn(p, lo - unitOffset_[p], hi - lo, lo);
  }
}

std::string FullyShardedModel::describe(size_t unit) const {
  const auto& ps = unitParams_[unit];
  std::string s = "unit " + std::to_string(unit);
  if (!ps.empty() && !params_[ps.front()].name.empty()) {
    s += " ('" + params_[ps.front()].name + "'" +
         (ps.size() > 1 ? " and " + std::to_string(ps.size() - 1) + " more" : "") + ")";
  }
  return s;
}

void FullyShardedModel::checkUnit(size_t unit, const char* fn) const {
  C10D_CHECK_ARG(unit < unitParams_.size(), "FullyShardedModel::", fn, ": unit ", unit,
                 " out of range: the model has ", unitParams_.size(), " units (group ",
                 group_->name(), ")");
}

std::vector<Tensor> FullyShardedModel::viewsOf(size_t unit, layers::Floats& buf) const {
  std::vector<Tensor> views;
  for (size_t p : unitParams_[unit]) {
    views.push_back(tensorOf(buf.data() + unitOffset_[p], params_[p].data.numel));
  }
  return views;
}

void FullyShardedModel::startGather(size_t unit, bool prefetch) {
  Unit& u = units_[unit];
  if (u.full) return;  // gathered or on its way
  const size_t chunk = unitChunk_[unit];
  u.full = std::make_shared<layers::Floats>(static_cast<size_t>(size_) * chunk, 0.0f);
  if (chunk == 0) return;  // no elements: nothing to move
  const int64_t issued = events_.stamp();
  u.gather =
      group_->allgatherIntoTensor(tensorOf(u.full->data(), u.full->size()),
                                  tensorOf(shardParam_->data() + unitShardOffset_[unit], chunk),
                                  AllgatherOptions{options_.timeout});
  u.keep = layers::KeepAlive(*u.gather, {shardParam_, u.full});
  events_.launched("allgather unit", unit, u.full->size() * sizeof(float), issued, *u.gather);
  ++current_.gathers;
  if (prefetch) ++current_.gathersPrefetched;
}

void FullyShardedModel::waitGather(size_t unit) {
  Unit& u = units_[unit];
  if (!u.gather) return;
  const auto t0 = Clock::now();
  auto work = std::move(u.gather);
  work->wait(options_.timeout);
  u.keep.release();
  current_.gatherWaitSeconds += secondsSince(t0);
}

std::vector<Tensor> FullyShardedModel::unshard(size_t unit, Pass pass) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkUnit(unit, "unshard");
  try {
    startGather(unit, false);
    if (options_.prefetch) {
      if (pass == Pass::kForward && unit + 1 < units_.size()) startGather(unit + 1, true);
      if (pass == Pass::kBackward && unit > 0) startGather(unit - 1, true);
    }
    waitGather(unit);
  } catch (...) {
    broken_.fail("unshard(" + describe(unit) + ")", std::current_exception());
  }
  Unit& u = units_[unit];
  if (pass == Pass::kBackward && !u.grad) {
    u.grad = std::make_shared<layers::Floats>(u.full->size(), 0.0f);
  }
  return viewsOf(unit, *u.full);
}

void FullyShardedModel::reshard(size_t unit) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkUnit(unit, "reshard");
  try {
    waitGather(unit);  // its errors surface here, not in a later op
  } catch (...) {
    broken_.fail("reshard(" + describe(unit) + ")", std::current_exception());
  }
  units_[unit].full.reset();
}

std::vector<Tensor> FullyShardedModel::grads(size_t unit) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkUnit(unit, "grads");
  Unit& u = units_[unit];
  C10D_CHECK_ARG(u.grad != nullptr, "FullyShardedModel::grads: ", describe(unit),
                 " is not in backward: call unshard(", unit, ", Pass::kBackward) first (group ",
                 group_->name(), ")");
  return viewsOf(unit, *u.grad);
}

void FullyShardedModel::finishOldestReduction() {
  Reduction r = std::move(reductions_.front());
  reductions_.pop_front();
  const auto t0 = Clock::now();
  r.work->wait(options_.timeout);
  r.keep.release();  // the unit's full gradients
  current_.reduceWaitSeconds += secondsSince(t0);
  float* dst = shardGrad_->data() + unitShardOffset_[r.unit];
  const float* src = r.out->data();
  for (size_t i = 0; i < r.out->size(); ++i) dst[i] += src[i];  // several backwards accumulate
}

void FullyShardedModel::reduceGrads(size_t unit) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkUnit(unit, "reduceGrads");
  Unit& u = units_[unit];
  C10D_CHECK_ARG(u.grad != nullptr, "FullyShardedModel::reduceGrads: ", describe(unit),
                 " is not in backward (reduced already, or never unshard(", unit,
                 ", Pass::kBackward)) (group ", group_->name(), ")");
  try {
    const size_t chunk = unitChunk_[unit];
    auto grad = std::move(u.grad);
    u.full.reset();
    if (chunk == 0) return;
    // One reduction in flight at most (the previous unit's, overlapping this unit's backward): its
    // full gradients and this unit's are what backward holds.
    while (!reductions_.empty()) finishOldestReduction();
    Reduction r;
    r.unit = unit;
    r.out = std::make_shared<layers::Floats>(chunk, 0.0f);
    const int64_t issued = events_.stamp();
    r.work = group_->reduceScatterTensor(tensorOf(r.out->data(), chunk),
                                         tensorOf(grad->data(), grad->size()),
                                         ReduceScatterOptions{ReduceOp::SUM, options_.timeout});
    r.keep = layers::KeepAlive(*r.work, {grad, r.out});
    events_.launched("reduce-scatter unit", unit, grad->size() * sizeof(float), issued, *r.work);
    reductions_.push_back(std::move(r));
    ++current_.reduceScatters;
    if (!options_.overlapReduce) finishOldestReduction();  // frees the unit's gradients now
  } catch (...) {
    broken_.fail("reduceGrads(" + describe(unit) + ")", std::current_exception());
  }
}

void FullyShardedModel::dropGathered() {
  for (size_t u = 0; u < units_.size(); ++u) {
    waitGather(u);
    units_[u].full.reset();
  }
}

FsdpStepStats FullyShardedModel::step() {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  for (size_t u = 0; u < units_.size(); ++u) {
    C10D_CHECK_ARG(units_[u].grad == nullptr, "FullyShardedModel::step: ", describe(u),
                   " is in backward: reduceGrads(", u, ") first (group ", group_->name(), ")");
  }
  const uint64_t stepNumber = optimizer_->steps() + 1;
  try {
    while (!reductions_.empty()) finishOldestReduction();
    dropGathered();  // stale after this step
    const auto t0 = Clock::now();
    float* grads = shardGrad_->data();
    if (size_ > 1) {
      const auto n = static_cast<float>(size_);
      for (size_t i = 0; i < local_; ++i) grads[i] /= n;
    }
    if (options_.clip.maxNorm > 0) {
      current_.gradNorm = clipGradNorm(*group_, grads, local_, options_.clip, options_.timeout);
    }
    optimizer_->step(shardParam_->data(), grads, spans_);
    std::fill(grads, grads + local_, 0.0f);
    current_.stepSeconds = secondsSince(t0);
  } catch (...) {
    broken_.fail("step " + std::to_string(stepNumber), std::current_exception());
  }
  FsdpStepStats st = current_;
  current_ = FsdpStepStats{};
  st.comm = events_.take();
  st.step = optimizer_->steps();
  st.localStateBytes = optimizer_->stateBytes();
  st.shardBytes = 2 * local_ * sizeof(float);
  const layers::LayerMemory memory = layers::layerMemory();
  st.layerBytes = static_cast<size_t>(memory.liveBytes);
  st.layerPeakBytes = static_cast<size_t>(memory.peakBytes);
  lastStats_ = st;
  return st;
}

void FullyShardedModel::checkViews(const std::vector<Tensor>& views, const char* fn) const {
  C10D_CHECK_ARG(views.size() == params_.size(), "FullyShardedModel::", fn, ": ", views.size(),
                 " views for ", params_.size(), " parameters (group ", group_->name(), ")");
  for (size_t p = 0; p < params_.size(); ++p) {
    const Tensor& v = views[p];
    C10D_CHECK_ARG(v.numel == params_[p].data.numel && v.dtype == DataType::kFloat32 &&
                       v.device.isCPU() && (v.data != nullptr || v.numel == 0),
                   "FullyShardedModel::", fn, ": the view of ",
                   layers::describeParameter(params_, p), " is not ", params_[p].data.numel,
                   " float32 elements on the CPU");
  }
}

void FullyShardedModel::gatherParameters(const std::vector<Tensor>& out) {
  checkViews(out, "gatherParameters");
  forEachUnit([&](size_t unit, const std::vector<Tensor>& views) {
    const std::vector<size_t>& ps = unitParams_[unit];
    for (size_t i = 0; i < ps.size(); ++i) {
      if (views[i].numel == 0) continue;
      std::memcpy(out[ps[i]].data, views[i].data, views[i].numel * sizeof(float));
    }
  });
}

void FullyShardedModel::forEachUnit(const UnitVisitor& fn) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  // Units gathered before (a training step's) stay; the others are freed after their visit.
  std::vector<bool> had(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) had[u] = units_[u].full != nullptr;
  for (size_t u = 0; u < units_.size(); ++u) {
    try {
      startGather(u, false);
      if (options_.prefetch && u + 1 < units_.size()) startGather(u + 1, true);
      waitGather(u);
    } catch (...) {
      broken_.fail("forEachUnit(" + describe(u) + ")", std::current_exception());
    }
    try {
      fn(u, viewsOf(u, *units_[u].full));
    } catch (...) {
      for (size_t v = u; v < units_.size() && v <= u + 1; ++v) {
        if (had[v]) continue;
        try {
          waitGather(v);  // the prefetch's buffers must outlive its collective
        } catch (...) {
          broken_.fail("forEachUnit(" + describe(v) + ")", std::current_exception());
        }
        units_[v].full.reset();
      }
      throw;
    }
    if (!had[u]) units_[u].full.reset();
  }
}

void FullyShardedModel::loadParameters(const std::vector<Tensor>& full) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkViews(full, "loadParameters");
  dropGathered();
  takeShard(full, shardParam_->data());
}

optim::OptimizerState FullyShardedModel::consolidateState(int dstRank) {
  C10D_CHECK_ARG(dstRank >= 0 && dstRank < size_, "FullyShardedModel::consolidateState: dstRank ",
                 dstRank, " out of range [0, ", size_, ") (group ", group_->name(), ")");
  optim::OptimizerState st;
  st.options = options_.optimizer;
  st.steps = steps();
  st.slotNames = options_.optimizer.slotNames();
  for (size_t u = 0; u < unitParams_.size(); ++u) {
    UnitState unit = consolidateUnitState(u, dstRank);
    if (rank_ != dstRank) continue;
    for (auto& slots : unit) st.slots.push_back(std::move(slots));
  }
  return st;
}

FullyShardedModel::UnitState FullyShardedModel::consolidateUnitState(size_t unit, int dstRank) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  checkUnit(unit, "consolidateUnitState");
  C10D_CHECK_ARG(dstRank >= 0 && dstRank < size_,
                 "FullyShardedModel::consolidateUnitState: ", "dstRank ", dstRank,
                 " out of range [0, ", size_, ") (group ", group_->name(), ")");
  const size_t k = optimizer_->numSlots();
  const size_t chunk = unitChunk_[unit];
  const auto n = static_cast<size_t>(size_);
  const std::vector<size_t>& ps = unitParams_[unit];
  UnitState out;
  if (rank_ == dstRank) {
    for (size_t p : ps) out.emplace_back(k, std::vector<float>(params_[p].data.numel));
  }
  if (chunk == 0) return out;
  // One slot at a time: rank r's chunk lands at r * chunk of recv.
  auto send = std::make_shared<layers::Floats>(chunk, 0.0f);
  auto recv = std::make_shared<layers::Floats>(rank_ == dstRank ? n * chunk : 0, 0.0f);
  for (size_t j = 0; j < k; ++j) {
    try {
      const float* slot = optimizer_->slot(j) + unitShardOffset_[unit];
      std::copy(slot, slot + chunk, send->data());
      std::vector<Tensor> outputs;
      if (rank_ == dstRank) {
        for (size_t r = 0; r < n; ++r) outputs.push_back(tensorOf(recv->data() + r * chunk, chunk));
      }
      auto work = group_->gather(outputs, tensorOf(send->data(), chunk),
                                 GatherOptions{dstRank, options_.timeout});
      work->then([send, recv](Work&) {});  // they outlive a timed-out wait
      work->wait(options_.timeout);
    } catch (...) {
      broken_.fail("consolidateUnitState(" + describe(unit) + ", " + std::to_string(dstRank) + ")",
                   std::current_exception());
    }
    if (rank_ != dstRank) continue;
    forEachRun(unit, 0, n * chunk, [&](size_t p, size_t pos, size_t count, size_t at) {
      const size_t i = static_cast<size_t>(std::find(ps.begin(), ps.end(), p) - ps.begin());
      std::copy(recv->data() + at, recv->data() + at + count,
                out[i][j].begin() + static_cast<ptrdiff_t>(pos));
    });
  }
  return out;
}

void FullyShardedModel::loadState(const optim::OptimizerState& full) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  full.checkCompatible(options_.optimizer, numels(),
                       "FullyShardedModel::loadState (group " + group_->name() + ")", names());
  optim::FlatOptimizer& opt = *optimizer_;
  forEachLocalRun([&](size_t p, size_t pos, size_t count, size_t at) {
    for (size_t j = 0; j < opt.numSlots(); ++j) {
      const float* src = full.slots[p][j].data() + pos;
      std::copy(src, src + count, opt.slot(j) + at);
    }
  });
  optimizer_->setSteps(full.steps);
}

void FullyShardedModel::loadState(const optim::OptimizerStateFile& file) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  file.checkCompatible(options_.optimizer, numels(),
                       "FullyShardedModel::loadState (group " + group_->name() + ")", names());
  optim::FlatOptimizer& opt = *optimizer_;
  forEachLocalRun([&](size_t p, size_t pos, size_t count, size_t at) {
    for (size_t j = 0; j < opt.numSlots(); ++j) file.read(p, j, pos, count, opt.slot(j) + at);
  });
  optimizer_->setSteps(file.header().steps);
}

size_t FullyShardedModel::localStateBytes() const {
  MutexLock lock(mu_);
  return optimizer_->stateBytes();
}

size_t FullyShardedModel::fullStateBytes() const {
  size_t total = 0;
  for (size_t n : unitNumels_) total += n;
  return total * options_.optimizer.slotNames().size() * sizeof(float);
}

uint64_t FullyShardedModel::steps() const {
  MutexLock lock(mu_);
  return optimizer_->steps();
}

FsdpStepStats FullyShardedModel::lastStats() const {
  MutexLock lock(mu_);
  return lastStats_;
}

std::vector<size_t> FullyShardedModel::numels() const {
  std::vector<size_t> out;
  for (const layers::Parameter& p : params_) out.push_back(p.data.numel);
  return out;
}

std::vector<std::string> FullyShardedModel::names() const {
  std::vector<std::string> out;
  for (const layers::Parameter& p : params_) out.push_back(p.name);
  return out;
}

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
