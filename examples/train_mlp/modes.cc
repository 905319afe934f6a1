#include "examples/train_mlp/modes.h"

#include <algorithm>
#include <cstdio>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/layers/common/memory.h"
#include "c10d/layers/ddp/reducer.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/zero/fully_sharded.h"
#include "c10d/layers/zero/sharded_optimizer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

namespace {

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c, d);
  return buf;
}

std::string kib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  return buf;
}

// "zero: rank 0 holds optimizer state 64.0 KiB of 86.0 KiB unsharded (74.4%), "
std::string stateLine(const char* mode, int rank, size_t local, size_t full) {
  return std::string(mode) + ": rank " + std::to_string(rank) + " holds optimizer state " +
         kib(local) + " of " + kib(full) + " unsharded" +
         format(" (%.1f%%), ", full > 0 ? 100.0 * static_cast<double>(local) / full : 0.0);
}

class LocalMode : public TrainingMode {
 public:
  LocalMode(const TrainOptions& o, Mlp& model)
      : model_(model), optimizer_(o.optimizer, model.numel()) {}

  void markReady(size_t) override {}
  void step() override { optimizer_.step(model_.params(), model_.grads()); }
  optim::OptimizerState fullState() override {
    return optim::OptimizerState::fromFlat(optimizer_, model_.numels());
  }
  void loadState(const Checkpoint& ck) override {
    ck.optimizer.applyTo(optimizer_, model_.numels());
  }
  std::vector<std::string> summary() const override {
    return {"local: optimizer state " + kib(optimizer_.stateBytes())};
  }

 private:
  Mlp& model_;
  optim::FlatOptimizer optimizer_;
};

class DdpMode : public TrainingMode {
 public:
  DdpMode(const TrainOptions& o, Mlp& model, std::shared_ptr<ProcessGroup> group)
      : model_(model),
        rank_(group->rank()),
        reducer_(model.parameters(), group, reducerOptions(o)),
        optimizer_(o.optimizer, model.numel()) {}

  void markReady(size_t p) override { reducer_.markReady(p); }
  void step() override {
    ddp::IterationStats s = reducer_.finalize();
    comm_ = std::move(s.comm);
    commSeconds_ += s.commSeconds;
    overlappedSeconds_ += s.overlappedSeconds;
    waitSeconds_ += s.finalizeWaitSeconds;
    launched_ += s.bucketBytes.size();
    launchedEarly_ += s.bucketsLaunchedEarly;
    rebuilt_ = rebuilt_ || s.rebuiltBuckets;
    optimizer_.step(model_.params(), model_.grads());
  }
  optim::OptimizerState fullState() override {
    // Every rank holds the same state; rank 0 writes it.
    if (rank_ != 0) return {};
    return optim::OptimizerState::fromFlat(optimizer_, model_.numels());
  }
  void loadState(const Checkpoint& ck) override {
    ck.optimizer.applyTo(optimizer_, model_.numels());
  }
  std::vector<std::string> summary() const override {
    const auto buckets = reducer_.buckets();
    std::string sizes;
    for (const auto& b : buckets) sizes += (sizes.empty() ? "" : ", ") + kib(b.bytes);
    std::vector<std::string> lines;
    lines.push_back("ddp: " + std::to_string(buckets.size()) +
                    (buckets.size() == 1 ? " bucket (" : " buckets (") + sizes + ")" +
                    (rebuilt_ ? ", rebuilt once from the first iteration's ready order" : ""));
    lines.push_back(
        format("ddp: %.0f of %.0f bucket allreduces launched during backward; comm %.4f s "
               "(sum over buckets),",
               static_cast<double>(launchedEarly_), static_cast<double>(launched_), commSeconds_) +
        format(" %.1f%% overlapped with backward; finalize() waited %.4f s",
               commSeconds_ > 0 ? 100.0 * overlappedSeconds_ / commSeconds_ : 0.0, waitSeconds_));
    lines.push_back("ddp: optimizer state " + kib(optimizer_.stateBytes()) +
                    " on every rank (replicated)");
    return lines;
  }

 private:
  static ddp::ReducerOptions reducerOptions(const TrainOptions& o) {
    ddp::ReducerOptions r;
    r.bucketCapBytes = o.bucketCapBytes;
    r.firstBucketBytes = o.firstBucketBytes;
    r.recordComm = !o.traceFile.empty();
    return r;
  }

  Mlp& model_;
  int rank_;
  ddp::Reducer reducer_;
  optim::FlatOptimizer optimizer_;
  double commSeconds_ = 0;
  double overlappedSeconds_ = 0;
  double waitSeconds_ = 0;
  size_t launched_ = 0;
  size_t launchedEarly_ = 0;
  bool rebuilt_ = false;
};

// The model has no gradient array (Mlp::Arrays::kParams), not even while the optimizer is built:
// backward computes each layer's gradients into buffers allocated as the layer's backward starts
// (Mlp::LayerStorage), handed to the optimizer with markReady(p, grad) and freed when it releases
// them, so no rank holds every gradient at once.
class ZeroMode : public TrainingMode, private Mlp::LayerStorage {
 public:
  ZeroMode(const TrainOptions& o, Mlp& model, std::shared_ptr<ProcessGroup> group)
      : model_(model),
        rank_(group->rank()),
        numels_(model.numels()),
        grads_(model.numParameters()),
        optimizer_(model.parameters(), group, zeroOptions(o, this)) {
    model_.setLayerStorage(this);
  }

  void markReady(size_t p) override {
    optimizer_.markReady(p, tensorOf(grads_[p].data(), grads_[p].size()));
  }
  void step() override {
    zero::ZeroStepStats s = optimizer_.step();
    comm_ = std::move(s.comm);
    commSeconds_ += s.commSeconds;
    stepSeconds_ += s.stepSeconds;
    launched_ += s.bucketsLaunched;
    launchedEarly_ += s.bucketsLaunchedEarly;
    layerBytes_ = s.layerBytes;
    layerPeakBytes_ = s.layerPeakBytes;
  }
  optim::OptimizerState fullState() override { return optimizer_.consolidateState(0); }
  void loadState(const Checkpoint& ck) override { optimizer_.loadState(ck.optimizer); }
  std::vector<std::string> summary() const override {
    const size_t local = optimizer_.localStateBytes();
    const size_t full = optimizer_.fullStateBytes();
    std::vector<std::string> lines;
    lines.push_back(stateLine("zero", rank_, local, full) +
                    std::to_string(optimizer_.shardOf(rank_).size()) + " of " +
                    std::to_string(optimizer_.numParameters()) + " parameters");
    lines.push_back(std::string("zero: ") +
                    zero::gradReductionName(optimizer_.options().gradReduction) +
                    format(", %.0f of %.0f gradient collectives launched during backward;",
                           static_cast<double>(launchedEarly_), static_cast<double>(launched_)) +
                    format(" step() blocked on comm %.4f s, optimizer arithmetic %.4f s",
                           commSeconds_, stepSeconds_));
    lines.push_back("zero: counted, the layers' own allocations on rank " + std::to_string(rank_) +
                    ": " + kib(layerBytes_) + " (peak " + kib(layerPeakBytes_) +
                    "): state, staging and buffers; not the model's parameters and gradients");
    lines.push_back("zero: gradients freed as the optimizer released them: at most " +
                    kib(peakGradBytes_) + " of the model's " + kib(model_.numel() * sizeof(float)) +
                    " held at once on rank " + std::to_string(rank_));
    return lines;
  }
  bool summaryPerRank() const override { return true; }

 private:
  static zero::ZeroOptions zeroOptions(const TrainOptions& o, ZeroMode* self) {
    zero::ZeroOptions z;
    z.optimizer = o.optimizer;
    z.gradReduction = o.gradReduction;
    z.bucketCapBytes = o.bucketCapBytes;
    z.recordComm = !o.traceFile.empty();
    z.onGradReleased = [self](size_t p) { self->release(p); };
    return z;
  }

  // Mlp::LayerStorage: the parameters stay in the model's array; a layer's gradients are
  // allocated as its backward starts.
  void enter(size_t layer, bool backward) override {
    if (!backward) return;
    for (size_t p : model_.layerParameters(layer)) {
      grads_[p].assign(numels_[p], 0.0f);
      gradBytes_ += grads_[p].size() * sizeof(float);
      peakGradBytes_ = std::max(peakGradBytes_, gradBytes_);
      model_.bind(p, model_.params() + model_.offset(p), grads_[p].data());
    }
  }
  void leave(size_t, bool) override {}
  void release(size_t p) {
    gradBytes_ -= grads_[p].size() * sizeof(float);
    std::vector<float>().swap(grads_[p]);  // freed
  }

  Mlp& model_;
  int rank_;
  const std::vector<size_t> numels_;
  std::vector<std::vector<float>> grads_;  // per parameter: this step's gradient until released
  size_t gradBytes_ = 0;
  size_t peakGradBytes_ = 0;
  zero::ShardedOptimizer optimizer_;
  double commSeconds_ = 0;
  double stepSeconds_ = 0;
  size_t launched_ = 0;
  size_t launchedEarly_ = 0;
  size_t layerBytes_ = 0;
  size_t layerPeakBytes_ = 0;
};

class Zero3Mode : public TrainingMode, private Mlp::LayerStorage {
 public:
  Zero3Mode(const TrainOptions& o, Mlp& model, std::shared_ptr<ProcessGroup> group,
            const Checkpoint* resume)
      : model_(model),
        rank_(group->rank()),
        size_(group->size()),
        fsdp_(resume != nullptr ? zero::FullyShardedModel(units(model), group, fsdpOptions(o),
                                                          shardSource(*resume))
                                : zero::FullyShardedModel(units(model), group, fsdpOptions(o),
                                                          unitInit(model, o.seed))) {
    model_.setLayerStorage(this);
    layers::resetLayerMemoryPeak();  // the first step's peak, not construction's
  }

  void markReady(size_t) override {}  // reduceGrads runs as each layer's backward ends
  void step() override {
    zero::FsdpStepStats s = fsdp_.step();
    comm_ = std::move(s.comm);
    gathers_ += s.gathers;
    prefetched_ += s.gathersPrefetched;
    gatherWait_ += s.gatherWaitSeconds;
    reduceWait_ += s.reduceWaitSeconds;
    stepSeconds_ += s.stepSeconds;
    layerBytes_ = s.layerBytes;
    layerPeakBytes_ = std::max(layerPeakBytes_, s.layerPeakBytes);
    layers::resetLayerMemoryPeak();  // the next step's peak
  }
  optim::OptimizerState fullState() override { return fsdp_.consolidateState(0); }
  void loadState(const Checkpoint& ck) override {
    C10D_CHECK(ck.optimizerFile != nullptr, "zero3 resumes from a checkpoint it opened");
    fsdp_.loadState(*ck.optimizerFile);
  }
  bool layerByLayer() const override { return true; }
  void forEachLayer(const std::function<void(size_t, const std::vector<Tensor>&)>& fn) override {
    fsdp_.forEachUnit(fn);
  }
  std::vector<std::vector<std::vector<float>>> layerState(size_t layer) override {
    return fsdp_.consolidateUnitState(layer, 0);
  }
  uint64_t optimizerSteps() const override { return fsdp_.steps(); }
  uint64_t checksum(const Mlp&) override {
    uint64_t h = kFnv1aBasis;  // Mlp::checksum's hash, streamed over the layers in order
    fsdp_.forEachUnit([&](size_t, const std::vector<Tensor>& params) {
      for (const Tensor& t : params) h = fnv1a(t.data, t.numel * sizeof(float), h);
    });
    return h;
  }
  double evaluate(Mlp& model, const float* x, const int32_t* labels, size_t n) override {
    evaluating_ = true;
    double loss = 0;
    try {
      loss = model.evaluate(x, labels, n);
    } catch (...) {
      evaluating_ = false;
      throw;
    }
    evaluating_ = false;
    return loss;
  }
  std::vector<std::string> summary() const override {
    const size_t local = fsdp_.localStateBytes();
    const size_t full = fsdp_.fullStateBytes();
    return {
        stateLine("zero3", rank_, local, full) + "1/" + std::to_string(size_) + " of each of " +
            std::to_string(fsdp_.numUnits()) + " layers' parameters",
        "zero3: " + std::to_string(gathers_) + " layer gathers, " + std::to_string(prefetched_) +
            " of them prefetched;" +
            format(" blocked on gathers %.4f s, on reduce-scatters %.4f s, optimizer arithmetic "
                   "%.4f s",
                   gatherWait_, reduceWait_, stepSeconds_),
        "zero3: counted, the layers' own allocations on rank " + std::to_string(rank_) + ": " +
            kib(layerBytes_) + " between steps (peak in a step " + kib(layerPeakBytes_) +
            "): shards, state, gathered layers; the model keeps no arrays of its own while "
            "training"};
  }
  bool summaryPerRank() const override { return true; }

 private:
  // Names and numels only: the model holds no arrays.
  static std::vector<std::vector<layers::Parameter>> units(const Mlp& model) {
    std::vector<std::vector<layers::Parameter>> out;
    for (size_t l = 0; l < model.numLayers(); ++l) {
      out.emplace_back();
      for (size_t p : model.layerParameters(l)) {
        out.back().push_back(
            {model.name(p), Tensor(nullptr, model.numels()[p], DataType::kFloat32), Tensor()});
      }
    }
    return out;
  }
  static zero::FullyShardedModel::UnitInit unitInit(const Mlp& model, uint64_t seed) {
    auto init = std::make_shared<Mlp::Initializer>(model, seed);
    return [init](size_t layer, const std::vector<Tensor>& views) {
      std::vector<float*> ptrs;
      for (const Tensor& v : views) ptrs.push_back(v.ptr<float>());
      init->fill(layer, ptrs);
    };
  }
  // This rank's shard straight from the checkpoint's model file (the units' parameters in the
  // model's order, which is the file's).
  static zero::FullyShardedModel::ShardSource shardSource(const Checkpoint& ck) {
    C10D_CHECK(ck.modelFile != nullptr, "zero3 resumes from a checkpoint it opened");
    std::shared_ptr<const ModelFileReader> file = ck.modelFile;
    return {
        [file](size_t p, size_t pos, size_t count, float* dst) { file->read(p, pos, count, dst); }};
  }
  static zero::FsdpOptions fsdpOptions(const TrainOptions& o) {
    zero::FsdpOptions f;
    f.optimizer = o.optimizer;
    f.prefetch = o.prefetch;
    f.overlapReduce = o.overlapReduce;
    f.timeout = o.timeout;
    f.recordComm = !o.traceFile.empty();
    return f;
  }

  // Mlp::LayerStorage: layer l is unit l.
  void enter(size_t layer, bool backward) override {
    const std::vector<size_t> ps = model_.layerParameters(layer);
    const std::vector<Tensor> data =
        fsdp_.unshard(layer, backward ? zero::Pass::kBackward : zero::Pass::kForward);
    std::vector<Tensor> grads;
    if (backward) grads = fsdp_.grads(layer);
    for (size_t i = 0; i < ps.size(); ++i) {
      model_.bind(ps[i], data[i].ptr<float>(), backward ? grads[i].ptr<float>() : nullptr);
    }
  }
  void leave(size_t layer, bool backward) override {
    if (backward) {
      fsdp_.reduceGrads(layer);
    } else if (evaluating_ || layer + 1 < fsdp_.numUnits()) {
      fsdp_.reshard(layer);  // in training the last layer stays: backward starts with it
    }
  }

  Mlp& model_;
  int rank_;
  int size_;
  zero::FullyShardedModel fsdp_;
  bool evaluating_ = false;  // evaluate(): every layer resharded after its forward
  size_t gathers_ = 0;
  size_t prefetched_ = 0;
  double gatherWait_ = 0;
  double reduceWait_ = 0;
  double stepSeconds_ = 0;
  size_t layerBytes_ = 0;
  size_t layerPeakBytes_ = 0;
};

}  // namespace

std::unique_ptr<TrainingMode> makeMode(const TrainOptions& options, Mlp& model,
                                       std::shared_ptr<ProcessGroup> group,
                                       const Checkpoint* resume) {
  switch (options.mode) {
    case Mode::kLocal:
      return std::make_unique<LocalMode>(options, model);
    case Mode::kDdp:
      C10D_CHECK(group != nullptr, "ddp mode needs a process group");
      return std::make_unique<DdpMode>(options, model, std::move(group));
    case Mode::kZero:
      C10D_CHECK(group != nullptr, "zero mode needs a process group");
      return std::make_unique<ZeroMode>(options, model, std::move(group));
    case Mode::kZero3:
      C10D_CHECK(group != nullptr, "zero3 mode needs a process group");
      return std::make_unique<Zero3Mode>(options, model, std::move(group), resume);
  }
  C10D_THROW(InvalidArgument, "unknown mode");
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
