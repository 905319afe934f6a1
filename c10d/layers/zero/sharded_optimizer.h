// ShardedOptimizer: ZeRO stage 2 (fairscale's OSS + ShardedDDP, DeepSpeed ZeRO stages 1 and 2,
// torch's ZeroRedundancyOptimizer) over the public ProcessGroup API, so it runs on every backend.
// Each rank holds the optimizer state of its shard of the parameters only (~1/N of the full
// state); gradients are reduced to their owner, the owner steps its shard, and the updated
// parameters are all-gathered so that every rank ends each step with the same full model.
//
// How a framework embeds it
//   ShardedOptimizer opt(params, group, options);  // collective: checks, broadcast from rank 0,
//                                                  // partition
//   for each step:
//     forward; backward, writing each parameter's local gradient and calling
//       opt.markReady(i) (or markReady(i, grad): this step's gradient is at `grad`) as parameter
//       i's gradient is complete; options.onGradReleased(i) then says when that gradient has been
//       read, so the framework may free or reuse its memory before backward ends
//     auto stats = opt.step();      // collective: grads averaged to owners, shard stepped,
//                                   // every rank's parameters updated
//   Checkpoint: auto full = opt.consolidateState(0); if (rank == 0) full.save(path);
//   Resume (any world size): opt.loadState(OptimizerState::load(path)) on every rank.
//
// Partition (fairscale OSS's rule)
//   Parameters sorted by numel, largest first (ties: lower index first), each to the rank with the
//   least elements so far (ties: the lowest rank). Computed from the numels alone, so every rank
//   gets the same partition without communicating. A rank may own nothing (more ranks than
//   parameters): it then holds no state and still takes part in every collective.
//
// Shards and buckets
//   Rank r's shard is its parameters in ascending index order, back to back: S_r elements (S =
//   max_r S_r). The optimizer keeps this rank's reduced gradients and its parameters (S_r floats
//   each, the parameters followed by min(R, S - S_r) zeros that a round past the shard sends) and
//   never a full-size buffer. Gradients move in buckets, launched as backward completes them (the
//   DDP Reducer's shape), each copied into staging before its collective starts:
//   kReduceScatter: the parameters back to back in index order are cut, from the last element
//     down, into ranges in which no rank owns more than W elements (W = N * R / (N + 1), at
//     least 1; R below; a parameter may span several buckets). Each rank's part of a range is a
//     contiguous range of its shard; one reduceScatterTensor(SUM) of N parts padded to the
//     largest leaves this rank's summed part in its shard of reduced gradients (where its part is
//     the widest) or after the N parts in the staging buffer ((N + 1) * W <= N * R floats in
//     all), copied into the shard when the collective completes.
//   kReduceToOwner (ShardedDDP): each owner's parameters, walked in reverse index order, are cut
//     into buckets of at most bucketCapBytes (a bucket holds at least one parameter); a bucket is
//     a contiguous range of the owner's shard, reduced with reduce(SUM, root = owner). The owner
//     packs it straight into its shard of reduced gradients; the other ranks into staging.
//   Either way a bucket starts as soon as its last parameter is marked and the earlier buckets
//   have started: buckets are ordered by their lowest element, descending (the order backward
//   completes them) and launched in that order on every rank (the Reducer's next_bucket rule),
//   so every rank issues the same collectives in the same order. Two staging buffers alternate:
//   markReady() waits for the older one's collective when both are in flight.
//   Once every bucket holding a piece of parameter i has been copied, the optimizer is done with
//   i's gradient for this step and calls options.onGradReleased(i) (without its lock held, on the
//   thread that launched the bucket: markReady() or step()). Each parameter is released exactly
//   once per step; one with no elements when it is marked.
//
// step()
//   1. Buckets not launched yet (parameters never marked) are launched now, reading the grad
//      tensors given at construction; every gradient collective is waited for.
//   2. The owner divides its summed gradients by the world size (fp32 division: the mean); with
//      options.clip, the total norm over every rank's shard is computed and the shard clipped
//      (grad_norm.h, one allreduce); it copies its parameters' current values out of their data
//      tensors and runs FlatOptimizer::step on its S_r elements (torch.optim's update rules,
//      flat_optimizer.h), each parameter with its group's lr and weight decay.
//   3. allgatherIntoTensor of every rank's updated shard in rounds of R elements of every shard
//      (R = bucketCapBytes / 4 / N, at least 1, at most S; a rank whose shard ends before a
//      round's end sends the zero tail), each round's result copied into the parameters' data
//      tensors while the next one is in flight.
//   The result equals one FlatOptimizer over all parameters stepped with the mean gradient, up to
//   the backend's summation order in step 1 (bit for bit whenever the sums are exact).
//   The framework's grad tensors are only read.
//
// Checkpoints
//   consolidateState(dst) gathers every rank's shard state (one gather of numSlots * S floats per
//   rank) and returns the full OptimizerState on dst, an empty one elsewhere. loadState(full) takes
//   a full state saved at any world size and keeps this rank's shard (no communication).
//
// Start-up (constructor, collective over the group)
//   Every rank allgathers its parameter count, its first locally invalid parameter (if any: a
//   non-fp32 or non-CPU tensor, a grad that does not match its data, null data), and a fingerprint
//   of its ZeroOptions; then every numel (dtypes are fp32 by then). Any problem is an
//   InvalidArgument on every rank naming the rank and the parameter index (a rank with bad
//   arguments of its own reports them in full, the others the first such rank's) — never a hang,
//   because no rank throws before the ranks have compared notes, and the group stays usable. Then
//   the parameters are broadcast from rank 0 (broadcastCoalesced) and partitioned.
//
// Errors
//   InvalidArgument: a null group, invalid optimizer options (OptimizerOptions::validate), a
//   bucketCapBytes of 0, any start-up problem above; markReady out of range or twice in one step,
//   or markReady(i, grad) with a grad that is not fp32 on the CPU with parameter i's numel;
//   consolidateState with a dstRank outside [0, N); loadState with a state that does not match
//   (options, slot names, parameter count, a parameter's numel — naming it). These leave the
//   optimizer unchanged. A failed or timed-out collective (TimeoutError, CommError) breaks the
//   optimizer: every later call throws Error quoting the first failure (the ranks' collectives may
//   no longer match, and the shard may be half-stepped).
//
// Threads and blocking
//   Starts no threads. markReady() may be called concurrently from several threads (autograd
//   workers); it and step() are serialized by an internal mutex, and bucket launches happen on
//   whichever thread marks a bucket's last parameter. Everything else must be called from one
//   thread at a time, and step() only after every markReady() of the step has returned. The
//   optimizer issues collectives on the group from those threads: other ops on the same group must
//   not be issued concurrently with backward or step() (use a second group for other traffic).
//   markReady() waits for communication only for a staging buffer (both in flight). The
//   constructor, step() and consolidateState() wait for their collectives, each wait bounded by
//   options.timeout (kUnsetTimeout: the op's own, i.e. the group's), throwing TimeoutError.
//
// Memory on rank r (N ranks, P = total parameter elements, S_r = rank r's shard, k = state slots,
// B = bucketCapBytes / 4 floats, L = the largest kReduceToOwner bucket another rank owns)
//   Optimizer state: k * S_r floats (the sum over ranks is exactly k * P, what one unsharded
//   optimizer holds). Shards (ZeroStepStats::shardBytes): S_r floats of reduced gradients, S_r of
//   parameters and min(R, S - S_r) zeros. Staging (ZeroStepStats::stagingBytes): one or two
//   buffers of max(N * R, L) floats (N * R <= B; L is at most B unless a parameter is larger;
//   with kReduceScatter (N + 1) * W, more than N * R only when R = 1; the second buffer only when
//   there are several rounds or staged buckets). So rank r holds (2 + k) * S_r floats + about
//   2 * max(B, L), never more than before issue 44 (2 * S + k * S_r + the same staging; R = 1
//   aside), and each full gradient only as long as backward takes to complete the buckets
//   holding it: a framework that frees each gradient at onGradReleased holds ZeRO-2's memory end
//   to end. During
//   consolidateState the gather buffers (k * N * S floats on dstRank, k * S elsewhere).
//   Parameters and grads are the framework's non-owning views (ZeRO stage 3, the parameters
//   sharded too, is FullyShardedModel: fully_sharded.h). Buffers a collective uses are held by a
//   layers::KeepAlive until it completes, and dropped as soon as it has been waited for, so a
//   destroyed optimizer frees them at once, or at the completion of a collective still in flight
//   (after a failure, or destroyed in the middle of backward): never while the backend uses them.
//   Every buffer and the state are counted (c10d/layers/common/memory.h;
//   ZeroStepStats::layerBytes): measured, the optimizer holds exactly the staging, its shards and
//   its state, and a step allocates nothing (tests/layers/zero_test.cc).
//
// Not supported (InvalidArgument at construction, or documented): parameters other than fp32 on
//   the CPU (no mixed-precision master weights, no GPU DeviceOps: the optimizer's arithmetic runs
//   on host memory; a GPU framework would stage its shard through the host). Parameter groups
//   differ only in lr and weight decay (torch allows any hyper-parameter per group).
#pragma once

#include <cstddef>
#include <cstdint>
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

struct ZeroOptions {
  optim::OptimizerOptions optimizer;
  // How gradients reach their owner, in buckets launched from markReady() so that they overlap
  // backward: reduceScatterTensor of element ranges of every rank's shard, or ShardedDDP's
  // reduce(dst = owner) of a range of one owner's shard.
  enum class GradReduction { kReduceScatter, kReduceToOwner };
  GradReduction gradReduction = GradReduction::kReduceScatter;
  // kReduceToOwner buckets; kReduceScatter buckets and the allgather rounds (N * R floats).
  size_t bucketCapBytes = 25u << 20;
  Milliseconds timeout = kUnsetTimeout;  // bound for every wait
  // Per-group lr and weight decay (indices into the parameter list; flat_optimizer.h).
  std::vector<optim::ParamGroup> paramGroups;
  // Clip the mean gradient's total norm over every shard before the update (grad_norm.h).
  GradClip clip;
  bool recordComm = false;  // fill ZeroStepStats::comm (timelines; costs a callback per collective)
  // Called once per step for each parameter i as soon as the optimizer has read this step's
  // gradient of i (copied into staging or its shard): the framework may free or reuse it. Runs on
  // the thread of the markReady() or step() that launched i's last bucket, without the
  // optimizer's lock (so concurrently when several threads mark); it must not call step(). Not
  // compared across ranks.
  std::function<void(size_t)> onGradReleased;
};

const char* gradReductionName(ZeroOptions::GradReduction mode);  // "reduce_scatter", ...

// What one step() did. Times are wall-clock seconds.
struct ZeroStepStats {
  double commSeconds = 0;           // step() blocked on the gradient reduction and the allgather
  double stepSeconds = 0;           // the optimizer's arithmetic on this rank's shard
  size_t localStateBytes = 0;       // this rank's optimizer state (slots)
  uint64_t step = 0;                // steps taken so far, this one included
  size_t bucketsLaunched = 0;       // collectives that moved gradients (0 when no parameter has
                                    //   elements)
  size_t bucketsLaunchedEarly = 0;  // launched by markReady(), before step()
  double markWaitSeconds = 0;       // markReady() waited for a staging buffer
  size_t rounds = 0;                // allgather rounds
  size_t shardBytes = 0;            // this rank's shards of reduced gradients and parameters
  size_t stagingBytes = 0;          // the staging buffers and scratch (see Memory above)
  double gradNorm = 0;              // the mean gradient's total norm before clipping (0: no clip)
  std::vector<layers::CommEvent> comm;  // with recordComm: each collective's launch, completion
  // The layers' own memory in this process after the step, measured (c10d/layers/common/memory.h:
  // this optimizer's buffers and state, and any other layer object's), and its peak since the
  // process started or the last resetLayerMemoryPeak().
  size_t layerBytes = 0;
  size_t layerPeakBytes = 0;
};

// Which rank owns each parameter under the greedy rule above (exposed for tests and tools).
std::vector<int> partitionParameters(const std::vector<size_t>& numels, int worldSize);

class ShardedOptimizer {
 public:
  // Collective: checks every rank has the same parameter count / numels / dtypes (fp32 only: any
  // other dtype is an InvalidArgument naming the parameter) — a mismatch is an error on every rank
  // naming the rank and parameter index, never a hang — then broadcasts parameters from rank 0 and
  // partitions them (greedy, largest first to the least-loaded rank; ties to the lowest rank; the
  // same on every rank without communication).
  ShardedOptimizer(std::vector<layers::Parameter> params, std::shared_ptr<ProcessGroup> group,
                   ZeroOptions options = {});
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Parameter i's local gradient is complete for this backward, in its grad tensor (or, with
  // `grad`, in that view until onGradReleased(i): fp32 on the CPU with the parameter's numel).
  // Launches every bucket it completes (buckets() order), reading their gradients now. Optional:
  // step() reads the gradients of parameters never marked. A parameter given without a grad
  // tensor (Parameter::grad an empty Tensor(): the framework keeps no gradient array, so that no
  // rank ever holds all full gradients, not even at start-up) must be marked with markReady(i,
  // grad) every step (InvalidArgument from step() otherwise). Same misuse rules as
  // Reducer::markReady.
  void markReady(size_t index) C10D_EXCLUDES(mu_);
  void markReady(size_t index, Tensor grad) C10D_EXCLUDES(mu_);
  // Collective: every parameter's local (un-averaged) gradient is marked or in its grad tensor.
  // Reduces gradients to their owners and averages (sum / world size), the owner steps its shard
  // with FlatOptimizer, and every rank's parameters end equal to the owners' updated values
  // (allgather in rounds). Gradients are only read.
  ZeroStepStats step() C10D_EXCLUDES(mu_);

  int ownerOf(size_t param) const;
  std::vector<size_t> shardOf(int rank) const;        // parameter indices, ascending
  size_t localStateBytes() const C10D_EXCLUDES(mu_);  // this rank's optimizer state
  size_t fullStateBytes() const;                      // what one unsharded optimizer would hold
  uint64_t steps() const C10D_EXCLUDES(mu_);

  // Collective: the full state on dstRank (every parameter's slots), an empty state (slots empty)
  // elsewhere.
  optim::OptimizerState consolidateState(int dstRank) C10D_EXCLUDES(mu_);
  // Every rank passes the same full state (read from a checkpoint, saved at any world size); keeps
  // its shard. Checks options / parameter count / numels against this optimizer (InvalidArgument
  // naming the parameter).
  void loadState(const optim::OptimizerState& full) C10D_EXCLUDES(mu_);

  size_t numParameters() const { return params_.size(); }
  // Elements of rank r's shard (S_r), the padded shard size (S = max over ranks) and the round
  // size (R elements of every shard per round).
  size_t shardNumel(int rank) const;
  size_t chunkNumel() const { return chunk_; }
  size_t roundNumel() const { return round_; }
  const ZeroOptions& options() const { return options_; }
  ProcessGroup& group() const { return *group_; }
  // The buckets' parameter indices (descending), in launch order. kReduceScatter: a parameter
  // split between buckets is in each. Parameters with no elements that would be alone in a
  // bucket are in none (nothing to move).
  std::vector<std::vector<size_t>> buckets() const C10D_EXCLUDES(mu_);
  ZeroStepStats lastStats() const C10D_EXCLUDES(mu_);

 private:
  struct Bucket {
    int owner = 0;               // kReduceToOwner
    std::vector<size_t> params;  // descending index order (the order backward marks them)
    size_t offset = 0;           // kReduceToOwner: in the owner's shard
    size_t numel = 0;            // kReduceToOwner: elements; kReduceScatter: the parts' width
    // kReduceScatter: rank r's part is [partBegin[r], partBegin[r] + partNumel[r]) of its shard.
    std::vector<size_t> partBegin;
    std::vector<size_t> partNumel;
    size_t pending = 0;          // parameters not yet marked this step
    std::shared_ptr<Work> work;  // kReduceToOwner on the owner: the in-place reduce
    layers::KeepAlive keep;
  };
  // A staging buffer's collective in flight, and (kReduceScatter) the bucket whose part to copy
  // from after the N parts into the shard once it completes.
  struct InFlight {
    std::shared_ptr<Work> work;
    layers::KeepAlive keep;
    size_t scatterBucket = ~size_t{0};
  };

  // "parameter 3 ('fc.bias')"
  std::string describe(size_t index) const { return layers::describeParameter(params_, index); }
  void verifyAcrossRanks();
  // The state functions below are called with mu_ held, or by the constructor.
  void partition() C10D_REQUIRES(mu_);
  void buildBuckets() C10D_REQUIRES(mu_);
  void buildScatterBuckets() C10D_REQUIRES(mu_);
  void indexBuckets() C10D_REQUIRES(mu_);
  void allocateStaging() C10D_REQUIRES(mu_);
  void resetStep() C10D_REQUIRES(mu_);
  // Calls fn(param, paramPos, count, shardPos) for each run of rank r's shard in [begin, end):
  // elements [paramPos, paramPos + count) of the parameter sit at shardPos in the shard.
  template <typename Fn>
  void forEachPiece(int r, size_t begin, size_t end, Fn&& fn) const;
  // This step's grads of rank r's shard [begin, begin + count) into dst.
  void packGrads(int r, size_t begin, size_t count, float* dst) const C10D_REQUIRES(mu_);
  // src (rank r's shard [begin, begin + count)) into the parameters' data tensors.
  void unpackParams(int r, size_t begin, size_t count, const float* src) const;
  // The index of a staging buffer free for reuse: waits for the collective still using the older
  // one (and copies its reduce-scatter output out).
  size_t acquireStaging() C10D_REQUIRES(mu_);
  void finishStaging(size_t i) C10D_REQUIRES(mu_);
  void useStaging(size_t i, std::shared_ptr<Work> work,
                  std::vector<std::shared_ptr<layers::Floats>> held, size_t scatterBucket)
      C10D_REQUIRES(mu_);
  void drainStaging() C10D_REQUIRES(mu_);
  // Launches the buckets whose parameters are all marked, in order; appends the parameters whose
  // gradients are no longer needed to `released`.
  void launchReadyBuckets(std::vector<size_t>& released) C10D_REQUIRES(mu_);
  void launchBucket(size_t b) C10D_REQUIRES(mu_);
  void markReadyImpl(size_t index, const Tensor* grad) C10D_EXCLUDES(mu_);
  void notifyReleased(const std::vector<size_t>& released) const;
  void allgatherRounds(ZeroStepStats& st) C10D_REQUIRES(mu_);
  void waitWork(Work& work);
  std::vector<size_t> numels() const;

  std::vector<layers::Parameter> params_;
  const std::shared_ptr<ProcessGroup> group_;
  const ZeroOptions options_;
  const int rank_;
  const int size_;

  std::vector<int> owner_;                   // per parameter
  std::vector<size_t> offset_;               // per parameter: offset in its owner's chunk
  std::vector<size_t> shardNumel_;           // per rank: S_r
  std::vector<std::vector<size_t>> shards_;  // per rank: parameter indices, ascending
  size_t chunk_ = 0;                         // S
  size_t round_ = 0;                         // R
  size_t scatterWidth_ = 0;                  // W: kReduceScatter's widest part
  std::vector<optim::Span> spans_;           // this rank's shard's parameter-group spans

  mutable Mutex mu_;
  // The two staging buffers, the collective using each, and the one to use next.
  std::shared_ptr<layers::Floats> staging_[2] C10D_GUARDED_BY(mu_);
  InFlight inFlight_[2] C10D_GUARDED_BY(mu_);
  size_t nextStaging_ C10D_GUARDED_BY(mu_) = 0;
  double markWaitSeconds_ C10D_GUARDED_BY(mu_) = 0;
  layers::CommEventLog events_ C10D_GUARDED_BY(mu_);
  // S_r: this rank's reduced gradients.
  std::shared_ptr<layers::Floats> shardGrad_ C10D_GUARDED_BY(mu_);
  // S_r + min(R, S - S_r): this rank's parameters, stepped, and a zero tail.
  std::shared_ptr<layers::Floats> shardParam_ C10D_GUARDED_BY(mu_);
  std::unique_ptr<optim::FlatOptimizer> optimizer_ C10D_GUARDED_BY(mu_);  // over S_r elements
  std::vector<Bucket> buckets_ C10D_GUARDED_BY(mu_);
  static constexpr size_t kNoBucket = ~size_t{0};
  // Per parameter: the buckets holding a piece of it (none: no elements), how many of them are
  // still to be packed this step, and where this step's gradient is.
  std::vector<std::vector<size_t>> bucketsOf_ C10D_GUARDED_BY(mu_);
  std::vector<size_t> unpacked_ C10D_GUARDED_BY(mu_);
  std::vector<const float*> gradOf_ C10D_GUARDED_BY(mu_);
  std::vector<uint8_t> marked_ C10D_GUARDED_BY(mu_);
  size_t nextBucket_ C10D_GUARDED_BY(mu_) = 0;
  size_t launchedEarly_ C10D_GUARDED_BY(mu_) = 0;
  layers::FailureLatch broken_ C10D_GUARDED_BY(mu_) = layers::FailureLatch("ShardedOptimizer");
  ZeroStepStats lastStats_ C10D_GUARDED_BY(mu_);
};

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
