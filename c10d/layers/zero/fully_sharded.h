// FullyShardedModel: ZeRO stage 3 (torch FSDP, fairscale FullyShardedDataParallel, DeepSpeed
// ZeRO-3) over the public ProcessGroup API. Each rank keeps 1/N of every parameter, of the reduced
// gradients and of the optimizer state; a unit's full parameters exist only while the framework
// computes that unit (gathered just before, freed just after), and its full gradients only until
// they are reduce-scattered into the owners' shards.
//
// How a framework embeds it
//   FullyShardedModel fsdp(units, group, options);   // collective: checks, rank 0's values, shard
//   // the framework may now free its own full parameters: the model holds its shard only
//   for each step:
//     for u in 0..U-1:  auto p = fsdp.unshard(u, Pass::kForward); forward of unit u on p;
//                       fsdp.reshard(u) (the last unit may stay: backward starts with it)
//     for u in U-1..0:  auto p = fsdp.unshard(u, Pass::kBackward); auto g = fsdp.grads(u);
//                       backward of unit u on p, writing its local gradients into g;
//                       fsdp.reduceGrads(u);
//     auto stats = fsdp.step();                       // collective: averaged, shard stepped
//   Evaluation: unshard(u, kForward) / reshard(u) unit by unit, as in a training forward (then
//   reshard the last unit too). A checksum or a checkpoint: fsdp.forEachUnit(fn) (collective),
//   one unit's full parameters at a time. gatherParameters fills full-size buffers: the whole
//   model on every rank, for small models and tests only.
//   Start-up without the whole model: the UnitInit constructor fills one unit at a time; the
//   ShardSource constructor and loadState(OptimizerStateFile) read each rank's shard alone (a
//   resume from a checkpoint).
//   Optimizer checkpoint: consolidateState(0) / loadState(full) at any world size;
//   consolidateUnitState(u, 0) one unit at a time, for a writer that streams it.
//
// Layout (torch FSDP's flat parameter, one per unit)
//   Unit u's parameters, back to back in the order given, are U_u elements, padded with zeros to
//   N * C_u (C_u = ceil(U_u / N)); rank r keeps elements [r * C_u, (r + 1) * C_u). The local
//   shard is every unit's C_u elements back to back: L = sum C_u, about P / N. A gather is one
//   allgatherIntoTensor of C_u floats per rank, a gradient reduction one reduceScatterTensor(SUM)
//   of N * C_u floats.
//
// Prefetch (options.prefetch, torch FSDP's forward_prefetch and BACKWARD_PRE)
//   unshard(u, kForward) also starts unit u + 1's gather, unshard(u, kBackward) unit u - 1's,
//   before it waits for unit u's, so the next unit's parameters travel while this one computes.
//   A unit already gathered (e.g. the last one, kept between forward and backward) is not
//   gathered again.
//
// step()
//   Waits for the outstanding reduce-scatters (each added into the shard of gradients: several
//   backward passes before one step accumulate), divides by N (fp32: the mean), clips the total
//   norm over every shard (options.clip, grad_norm.h; the zero padding adds nothing), runs
//   FlatOptimizer::step on the L local elements, each with its parameter group's lr and weight
//   decay (padding has zero parameters and gradients and
//   stays zero under every rule), zeroes the gradient shard and drops any gathered parameters
//   (they are stale). The result equals one FlatOptimizer over all parameters stepped with the mean
//   gradient, up to the backend's summation order (bit for bit whenever the sums are exact).
//
// Collectives and their order
//   Every rank must make the same calls in the same order (the same units unsharded, resharded
//   and reduced): they issue the collectives. The constructor checks what it can across ranks
//   (unit layout, numels, options, prefetch) and fails on every rank naming the first difference,
//   never hanging.
//
// Errors
//   InvalidArgument, leaving the model usable: a null group, empty or bad units (an fp32 CPU
//   parameter, with data unless a UnitInit makes it), a null UnitInit, invalid optimizer options, a
//   start-up difference; a unit out of range; grads(u) or reduceGrads(u) without unshard(u,
//   kBackward); step() while a unit's backward has not been reduced; gatherParameters /
//   loadParameters with views that do not match (naming the parameter); consolidateState /
//   loadState as ShardedOptimizer's. A failed or timed-out collective breaks the model: every later
//   call throws Error quoting it.
//
// Memory (U units, F = max N * C_u, k state slots), counted (c10d/layers/common/memory.h)
//   Always: the parameter shard, the gradient shard and the state ((2 + k) * L floats). At
//   start-up with a UnitInit, one unit's full parameters more (the plain constructor reads the
//   framework's full parameters, and broadcastCoalesced flattens them into a temporary buffer).
//   forEachUnit: two units' full parameters (one without prefetch). consolidateUnitState: on
//   dstRank the unit's full state (k * U_u) and one slot's gather (N * C_u), elsewhere C_u. While
//   training, at most two units' full parameters (this one and the prefetched one, F floats
//   each) and two units' full gradients (the unit in backward, and the previous one while its
//   reduce-scatter is in flight, which reduceGrads() of the next unit waits for), plus C_u floats
//   for the reduce-scatter's result: (2 + k) * L + 4 * F + max C_u floats at the peak; one unit's
//   parameters fewer without prefetch, one unit's gradients fewer without overlapReduce (2 * F
//   with neither: what a unit's backward itself needs, its parameters and its gradients). The
//   parameter and gradient shards are about (params + grads) / N. tests/layers/fsdp_test.cc
//   checks the bound.
//
// Threads: starts none; all calls from one thread at a time (an internal mutex guards the state).
// Parameters other than fp32 on the CPU are not supported (as ShardedOptimizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/comm_event.h"
#include "c10d/layers/common/failure.h"
#include "c10d/layers/common/keep_alive.h"
#include "c10d/layers/common/memory.h"
#include "c10d/layers/common/parameter.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "c10d/layers/zero/grad_norm.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

struct FsdpOptions {
  optim::OptimizerOptions optimizer;
  bool prefetch = true;  // gather the next unit while this one computes
  // Leave a unit's reduce-scatter in flight while the next unit's backward runs (reduceGrads of
  // the next unit waits for it). false: reduceGrads waits for its own, so one unit's full
  // gradients exist at a time instead of two (with prefetch off too, backward holds two units'
  // worth above the shards instead of four), at the cost of that overlap.
  bool overlapReduce = true;
  Milliseconds timeout = kUnsetTimeout;  // bound for every wait
  // Per-group lr and weight decay (indices into the parameters, units flattened in order).
  std::vector<optim::ParamGroup> paramGroups;
  GradClip clip;  // the mean gradient's total norm over every shard, clipped (grad_norm.h)
  bool recordComm = false;  // fill FsdpStepStats::comm (timelines; a callback per collective)
};

enum class Pass { kForward, kBackward };

// What happened since the previous step(), and the step itself. Times are wall-clock seconds.
struct FsdpStepStats {
  uint64_t step = 0;             // steps taken so far, this one included
  size_t gathers = 0;            // unit allgathers issued
  size_t gathersPrefetched = 0;  // of which a prefetch started
  double gatherWaitSeconds = 0;  // unshard() blocked on an allgather
  size_t reduceScatters = 0;     // unit gradient reductions
  double reduceWaitSeconds = 0;  // reduceGrads() and step() blocked on reduce-scatters
  double stepSeconds = 0;        // the optimizer's arithmetic on the local shard
  double gradNorm = 0;           // the mean gradient's total norm before clipping (0: no clip)
  std::vector<layers::CommEvent> comm;  // with recordComm: each gather's and reduce-scatter's
  size_t localStateBytes = 0;           // this rank's optimizer state
  size_t shardBytes = 0;                // this rank's parameter and gradient shards
  // The layers' memory in this process after the step, and its peak since the process started or
  // the caller's last resetLayerMemoryPeak() (c10d/layers/common/memory.h; call it before a step to
  // measure that step).
  size_t layerBytes = 0;
  size_t layerPeakBytes = 0;
};

class FullyShardedModel {
 public:
  // Fills unit `unit`'s parameters (views, one per parameter, zero at first) with their initial
  // values. Called for u = 0, 1, ..., U-1 in order, on every rank; rank 0's values are kept.
  using UnitInit = std::function<void(size_t unit, const std::vector<Tensor>& params)>;
  // Sees unit `unit`'s full parameters (views valid during the call only).
  using UnitVisitor = std::function<void(size_t unit, const std::vector<Tensor>& params)>;

  // Collective. units[u] are unit u's parameters (their data: initial values, rank 0's are
  // broadcast; their grads are not used). The views are read only here.
  FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                    std::shared_ptr<ProcessGroup> group, FsdpOptions options = {});
  // Collective. As above, but the whole model never exists at once: units[u] give names and
  // numels (data may be null), and init fills one unit at a time into a temporary buffer, which
  // is broadcast from rank 0 (one broadcast per unit), sharded and freed before the next unit
  // (torch FSDP's param_init_fn). InvalidArgument for a null init.
  FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                    std::shared_ptr<ProcessGroup> group, FsdpOptions options, const UnitInit& init);
  // Collective (the start-up checks only). As above, but each rank reads only its own shard, with
  // no broadcast: source.read(p, pos, count, dst) copies elements [pos, pos + count) of parameter
  // p (units flattened in order) into dst, called for the runs of this rank's chunks only (e.g.
  // from a checkpoint file every rank can read). InvalidArgument for a null read; what read
  // throws propagates (the group's collectives are complete by then).
  struct ShardSource {
    std::function<void(size_t param, size_t pos, size_t count, float* dst)> read;
  };
  FullyShardedModel(std::vector<std::vector<layers::Parameter>> units,
                    std::shared_ptr<ProcessGroup> group, FsdpOptions options,
                    const ShardSource& source);
  ~FullyShardedModel();
  FullyShardedModel(const FullyShardedModel&) = delete;
  FullyShardedModel& operator=(const FullyShardedModel&) = delete;

  // Unit u's parameters, full, as views valid until reshard(u), reduceGrads(u) or step().
  // Collective (its gather, and the prefetch).
  std::vector<Tensor> unshard(size_t unit, Pass pass) C10D_EXCLUDES(mu_);
  // Frees unit u's full parameters (no-op when not unsharded).
  void reshard(size_t unit) C10D_EXCLUDES(mu_);
  // After unshard(u, kBackward): views of unit u's full gradients (zero at first), for the
  // framework's backward to write this rank's local gradients into.
  std::vector<Tensor> grads(size_t unit) C10D_EXCLUDES(mu_);
  // Collective: unit u's gradients are complete; reduce-scatters them into the owners' shards and
  // frees the unit's full parameters (and its gradients once the collective completes).
  void reduceGrads(size_t unit) C10D_EXCLUDES(mu_);
  // Collective (waits for the reductions): the mean gradient, the shard stepped.
  FsdpStepStats step() C10D_EXCLUDES(mu_);

  // Collective: every parameter's full values into out[p] (one view per parameter, in the order
  // of the units, numel as given at construction), on every rank. out is the whole model: for
  // large models use forEachUnit.
  void gatherParameters(const std::vector<Tensor>& out) C10D_EXCLUDES(mu_);
  // Collective: for u = 0..U-1, gathers unit u's full parameters (with prefetch, unit u + 1's
  // gather travels meanwhile), calls fn(u, views) and frees them: at most two units' full
  // parameters at a time (units already gathered by a step stay as they were). fn must not call
  // into this model (it runs under its lock) and should not throw: the other ranks would wait in
  // the next unit's gather until the timeout. If it does, the gathered units are freed and the
  // exception propagates.
  void forEachUnit(const UnitVisitor& fn) C10D_EXCLUDES(mu_);
  // Every rank passes the same full values (e.g. from a checkpoint); keeps its shard. No
  // communication.
  void loadParameters(const std::vector<Tensor>& full) C10D_EXCLUDES(mu_);
  // As ShardedOptimizer's: the full state on dstRank (collective), or a full state kept sharded.
  // consolidateState holds the whole state on dstRank (built unit by unit); a checkpoint of a
  // large model writes consolidateUnitState's one unit at a time instead.
  optim::OptimizerState consolidateState(int dstRank) C10D_EXCLUDES(mu_);
  // Collective: unit u's full state on dstRank, [i][j] = the unit's i-th parameter's slot j
  // (OptimizerState::slots' layout); empty on the other ranks.
  using UnitState = std::vector<std::vector<std::vector<float>>>;
  UnitState consolidateUnitState(size_t unit, int dstRank) C10D_EXCLUDES(mu_);
  void loadState(const optim::OptimizerState& full) C10D_EXCLUDES(mu_);
  // The same from a state file, reading only the ranges of this rank's shard (no communication;
  // the whole state is never in memory).
  void loadState(const optim::OptimizerStateFile& file) C10D_EXCLUDES(mu_);

  size_t numUnits() const { return unitNumels_.size(); }
  size_t numParameters() const { return params_.size(); }
  size_t unitNumel(size_t unit) const { return unitNumels_.at(unit); }  // U_u
  size_t localNumel() const { return local_; }                          // L
  size_t localStateBytes() const C10D_EXCLUDES(mu_);
  size_t fullStateBytes() const;  // what one unsharded optimizer would hold
  uint64_t steps() const C10D_EXCLUDES(mu_);
  const FsdpOptions& options() const { return options_; }
  FsdpStepStats lastStats() const C10D_EXCLUDES(mu_);

 private:
  // A unit's state while training; its layout is in the unit* vectors below.
  struct Unit {
    std::shared_ptr<layers::Floats> full;  // N * C_u parameters while unsharded or gathering
    std::shared_ptr<Work> gather;          // in flight (null once waited)
    layers::KeepAlive keep;                // its buffers, while in flight
    std::shared_ptr<layers::Floats> grad;  // N * C_u gradients during its backward
  };
  struct Reduction {
    size_t unit = 0;
    std::shared_ptr<layers::Floats> out;  // C_u: this rank's sum
    std::shared_ptr<Work> work;
    layers::KeepAlive keep;  // the unit's full gradients and `out`, while in flight
  };

  void setUp(std::vector<std::vector<layers::Parameter>> units, const UnitInit* init,
             const ShardSource* source = nullptr);
  // Calls fn(param, paramPos, count, shardPos) for each run of this rank's chunks: elements
  // [paramPos, paramPos + count) of the parameter belong at shardPos of the local shard.
  template <typename Fn>
  void forEachLocalRun(Fn&& fn) const;
  // Unit u's values from init, rank 0's broadcast, this rank's chunk into the shard.
  void initUnit(size_t unit, const UnitInit& init) C10D_REQUIRES(mu_);
  std::string describe(size_t unit) const;  // "unit 2 ('fc2.weight', 2 parameters)"
  void checkUnit(size_t unit, const char* fn) const;
  // InvalidArgument naming the parameter unless views[p] is parameter p's numel of fp32 on the CPU.
  void checkViews(const std::vector<Tensor>& views, const char* fn) const;
  // This rank's chunk of every unit, from each parameter's full values (values[p]) into shard.
  void takeShard(const std::vector<Tensor>& values, float* shard) const;
  // Calls fn(param, paramPos, count, flatPos) for each run of unit u's flat parameter in
  // [begin, end): elements [paramPos, paramPos + count) of the parameter sit at flatPos.
  template <typename Fn>
  void forEachRun(size_t unit, size_t begin, size_t end, Fn&& fn) const;
  void startGather(size_t unit, bool prefetch) C10D_REQUIRES(mu_);
  void waitGather(size_t unit) C10D_REQUIRES(mu_);
  void finishOldestReduction() C10D_REQUIRES(mu_);
  void dropGathered() C10D_REQUIRES(mu_);
  // Views of unit u's parameters in a buffer laid out as the unit's flat parameter.
  std::vector<Tensor> viewsOf(size_t unit, layers::Floats& buf) const;
  std::vector<size_t> numels() const;
  std::vector<std::string> names() const;

  std::vector<layers::Parameter> params_;  // names and numels only (data not kept)
  std::vector<size_t> unitOf_;             // per parameter
  std::vector<size_t> unitOffset_;         // per parameter: offset in its unit's flat parameter
  std::vector<std::vector<size_t>> unitParams_;  // per unit: its parameters, in order
  std::vector<size_t> unitNumels_;               // per unit: U_u
  std::vector<size_t> unitChunk_;                // per unit: C_u
  std::vector<size_t> unitShardOffset_;          // per unit: where its C_u start in the shard
  const std::shared_ptr<ProcessGroup> group_;
  const FsdpOptions options_;
  const int rank_;
  const int size_;
  size_t local_ = 0;                // L
  std::vector<optim::Span> spans_;  // the local shard's parameter-group spans

  mutable Mutex mu_;
  std::vector<Unit> units_ C10D_GUARDED_BY(mu_);
  std::shared_ptr<layers::Floats> shardParam_ C10D_GUARDED_BY(mu_);       // L
  std::shared_ptr<layers::Floats> shardGrad_ C10D_GUARDED_BY(mu_);        // L
  std::unique_ptr<optim::FlatOptimizer> optimizer_ C10D_GUARDED_BY(mu_);  // over L elements
  std::deque<Reduction> reductions_ C10D_GUARDED_BY(mu_);                 // in flight, oldest first
  FsdpStepStats current_ C10D_GUARDED_BY(mu_);
  layers::CommEventLog events_ C10D_GUARDED_BY(mu_);
  FsdpStepStats lastStats_ C10D_GUARDED_BY(mu_);
  layers::FailureLatch broken_ C10D_GUARDED_BY(mu_) = layers::FailureLatch("FullyShardedModel");
};

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
