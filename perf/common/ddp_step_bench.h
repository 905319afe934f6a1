// DdpStepBench: the modes of ddp_step_perf (perf/ddp_step_perf.cc explains them and the columns)
// over one world group: it owns the synthetic model, the Reducers and ZeRO optimizers the modes
// use, calibrates backward's compute, runs the interleaved steps, checks the results, and turns
// the ranks' times and measured memory into table rows.
//
// Collective: every rank calls every public method (but the accessors) in the same order. The
// modes' collectives go through a TimedGroup over the world group; barriers and the calibration's
// allreduce go to the world group itself; times and counts are exchanged over the group's Store.
// One thread; every wait is bounded by the options' timeout (TimeoutError). Memory per rank: the
// model's parameters and gradients, plus per mode what it needs (flat: one model-sized buffer;
// ddp, ddp-view: the Reducer's buckets; ddp+opt: the full optimizer state; zero, zero-owner: a
// parameter copy, ZeRO's shards, staging and state; zero3: FullyShardedModel's shards and state,
// and during its steps up to two units' full parameters and gradients), allocated by setUp().
// Each mode's share of the layers' counted memory (c10d/layers/common/memory.h) is tracked per
// object, as the process holds every mode's objects at once (ddp_step_perf.cc says how).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/device_ops.h"
#include "c10d/layers/common/flat_buffer.h"
#include "c10d/layers/common/process_memory.h"
#include "c10d/layers/ddp/reducer.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/zero/fully_sharded.h"
#include "c10d/layers/zero/sharded_optimizer.h"
#include "perf/common/ddp_step.h"
#include "perf/common/synthetic_model.h"
#include "perf/common/timed_group.h"
#include "perf/common/world.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// Optimizer-state bytes per rank.
struct StateBytes {
  size_t ddp = 0;                   // DDP: the full state on every rank
  size_t zeroFull = 0;              // ShardedOptimizer::fullStateBytes()
  size_t zeroMax = 0, zeroMin = 0;  // ShardedOptimizer::localStateBytes(), over ranks
  // zero3 (0 when not run): FullyShardedModel's state and parameter + gradient shards, the same
  // on every rank (each unit split in N equal chunks).
  size_t zero3State = 0, zero3Shards = 0;
};

class DdpStepBench {
 public:
  // `o` must outlive the bench. C10D_PERF_INJECT_ERROR=1 makes the last rank plant one wrong
  // element in each checked output.
  DdpStepBench(const DdpStepOptions& o, std::shared_ptr<ProcessGroup> world);

  // Allocates what the modes need and builds the Reducers and ZeRO optimizers (collective).
  void setUp();
  // Measures the kernels and sets backward's compute; returns the "# backward: ..." line.
  std::string calibrate();
  // -w untimed, then -n timed iterations; each runs every mode once, in a rotating order.
  void run();
  // -c checked steps per mode (but none), then the optimizer modes' parameters.
  void check();
  // The table rows, in o.modes order.
  std::vector<StepRow> rows();
  StateBytes stateBytes();
  // The model's own parameter and gradient arrays per rank (each numel x 4 bytes): the
  // framework's tensors, not counted in the rows' memory.
  size_t modelArrayBytes() const { return model_.numel() * sizeof(float); }

  // Collective: the process's memory (RSS) by phase, each figure the largest rank's: start-up
  // (from the process's start to the first step: the model, the modes' objects, calibration),
  // the steps (sampled after each), the check.
  layers::RssPhases processMemory();
  // "# reducer: ..." (the buckets after warm-up: rebuilt once from the ready order), or "".
  std::string bucketLine() const;
  std::vector<size_t> bucketBytes() const;
  RankExchange& exchange() { return ex_; }
  const optim::OptimizerOptions& optimizer() const { return optimizer_; }
  double computeUsPerLayer() const { return computeUsPerLayer_; }
  double targetUsPerLayer() const { return targetUs_; }
  const KernelSpeed& kernelSpeed() const { return speed_; }
  size_t extraUpdatesPerLayer() const { return extraUpdates_; }
  double flatAllreduceSec() const { return flatAllreduceSec_; }  // 0 unless calibrated

 private:
  struct ModeResult {
    std::vector<double> step, comm;          // per timed step, this rank's
    double overlapped = 0, reducerComm = 0;  // Reducer IterationStats sums, this rank's
    int64_t peakBytes = 0, liveBytes = 0;    // this rank's, over the timed steps
    int64_t rssRise = -1;                    // this rank's VmHWM over a step minus RSS before
    int64_t wrong = -1;                      // over ranks; -1 = not checked
  };
  // What one step reports: the Reducer's stats (ddp modes), and FullyShardedModel's peak of the
  // layers' memory (its step() resets the process's peak before returning).
  struct StepStats {
    ddp::IterationStats reducer;
    int64_t layerPeakBytes = 0;
  };
  // The objects holding the layers' counted memory; a mode's share is the sum over its own.
  enum Holder {
    kFlatBuffer,
    kDdpReducer,
    kDdpViewReducer,
    kDdpOptimizer,
    kZeroOpt,
    kZeroOwnerOpt,
    kFsdp,
    kNumHolders
  };

  bool uses(StepMode m) const;
  // Its holders, the first of which is charged with what a step leaves allocated (a rebuild).
  std::vector<Holder> holders(StepMode m) const;
  int64_t heldBytes(StepMode m) const;
  // Runs build() and charges `h` with the counted bytes it leaves allocated.
  template <typename Fn>
  void counted(Holder h, Fn&& build);
  void barrier();
  float* grad(StepMode mode, size_t layer);
  float* params(StepMode mode);
  uint64_t optimizerSteps(StepMode mode) const;
  // One step of `mode`.
  StepStats step(StepMode mode);
  zero::FsdpStepStats fullyShardedStep();
  void flatAllreduce();
  double timeFlatAllreduce();
  int64_t wrongGrads(StepMode mode);
  std::vector<int64_t> wrongParams(const std::vector<size_t>& modes);
  std::vector<double> acrossRanks(const std::vector<double>& mine, bool maximum);
  double sumOverRanks(double mine);
  int64_t maxOverRanks(int64_t mine);

  const DdpStepOptions& o_;
  const Milliseconds timeout_;
  const std::shared_ptr<ProcessGroup> world_;
  const std::shared_ptr<TimedGroup> pg_;  // the modes' collectives go through it
  const int rank_;
  const int n_;
  RankExchange ex_;
  layers::RssPhases rss_;  // start-up from construction (its peak: since the process started)
  std::shared_ptr<layers::DeviceOps> ops_;
  bool inject_ = false;
  optim::OptimizerOptions optimizer_;

  SyntheticModel model_;     // parameters (ddp modes) and gradients (all but ddp-view)
  layers::FlatBuffer flat_;  // flat, and the calibration's allreduce
  std::vector<float> zeroData_, zeroOwnerData_;  // each ZeRO optimizer's parameters
  std::unique_ptr<ddp::Reducer> ddp_, ddpView_;  // ddp and ddp+opt share one
  std::unique_ptr<optim::FlatOptimizer> ddpOptimizer_;
  std::unique_ptr<zero::ShardedOptimizer> zero_, zeroOwner_;
  std::unique_ptr<zero::FullyShardedModel> fsdp_;  // zero3: one unit per layer
  std::vector<float> fsdpCheck_;                   // its parameters, gathered for the check only
  int64_t held_[kNumHolders] = {};                 // counted bytes per holder, this rank's

  KernelSpeed speed_;
  size_t extraUpdates_ = 0;
  double targetUs_ = 0, computeUsPerLayer_ = 0, flatAllreduceSec_ = 0;
  std::vector<ModeResult> results_;
};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
