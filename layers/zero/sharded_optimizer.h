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
//     forward; backward, writing each parameter's local gradient into its grad tensor and
//       (optionally) calling opt.markReady(i) as parameter i's gradient is complete
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
// Rank-major chunks
//   Rank r's shard is its parameters in ascending index order, back to back: S_r elements, padded
//   with zeros to S = max_r S_r. The optimizer keeps two shard-sized buffers (this rank's reduced
//   gradients and its parameters) and never a full-size one: gradients and parameters move in
//   rounds of R elements of every shard (R = bucketCapBytes / 4 / N, at most S), through two
//   staging buffers of N * R floats used in turn, so that round t + 1 is packed while round t is in
//   flight (one buffer when a single round moves everything).
//
// step()
//   1. Gradients reach their owners (the framework's grad tensors are only read):
//      kReduceScatter: round t packs elements [t*R, t*R + R) of every rank's shard, read straight
//      from the grad tensors, and one reduceScatterTensor(SUM) leaves the sum of this rank's part
//      in its shard of reduced gradients. kReduceToOwner (ShardedDDP): each owner's parameters,
//      walked in reverse index order, are cut into buckets of at most bucketCapBytes (a bucket
//      holds at least one parameter); a bucket is a contiguous range of the owner's shard, and
//      reduce(SUM, root = owner) of it starts as soon as its last parameter is marked. The owner
//      packs the bucket straight into its shard of reduced gradients; the other ranks pack it into
//      a staging buffer, which is reused once its reduce completes (markReady() waits for the older
//      of the two when both are in flight). Buckets are ordered by their lowest parameter index,
//      descending (the order backward completes them) and launched in that order on every rank: a
//      bucket complete early waits for the earlier ones (the Reducer's next_bucket rule), so every
//      rank issues the same collectives in the same order.
//   2. The owner divides its summed gradients by the world size (fp32 division: the mean); with
//      options.clip, the total norm over every rank's shard is computed and the shard clipped
//      (grad_norm.h, one allreduce); it copies its parameters' current values out of their data
//      tensors and runs FlatOptimizer::step on its S_r elements (torch.optim's update rules,
//      flat_optimizer.h), each parameter with its group's lr and weight decay.
//   3. allgatherIntoTensor of every rank's updated shard in rounds of R, each round's result
//      copied into the parameters' data tensors while the next one is in flight.
//   The result equals one FlatOptimizer over all parameters stepped with the mean gradient, up to
//   the backend's summation order in step 1 (bit for bit whenever the sums are exact).
//   The framework's grad tensors are only read; a framework that frees each non-owned gradient
//   after step() (or after its bucket's reduce, in kReduceToOwner) holds ZeRO-2's memory.
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
//   bucketCapBytes of 0, any start-up problem above; markReady out of range or twice in one step;
//   consolidateState with a dstRank outside [0, N); loadState with a state that does not match
//   (options, slot names, parameter count, a parameter's numel — naming it). These leave the
//   optimizer unchanged. A failed or timed-out collective (TimeoutError, CommError) breaks the
//   optimizer: every later call throws Error quoting the first failure (the ranks' collectives may
//   no longer match, and the shard may be half-stepped).
//
// Threads and blocking
//   Starts no threads. markReady() may be called concurrently from several threads (autograd
//   workers); it and step() are serialized by an internal mutex, and kReduceToOwner bucket launches
//   happen on whichever thread marks a bucket's last parameter. Everything else must be called from
//   one thread at a time, and step() only after every markReady() of the step has returned. The
//   optimizer issues collectives on the group from those threads: other ops on the same group must
//   not be issued concurrently with backward or step() (use a second group for other traffic).
//   markReady() does not wait for communication. The constructor, step() and consolidateState()
//   wait for their collectives, each wait bounded by options.timeout (kUnsetTimeout: the op's own,
//   i.e. the group's), throwing TimeoutError.
//
// Memory (N ranks, P = total parameter elements, S = the largest shard, k = state slots)
//   Optimizer state: k * S_r floats on rank r (the sum over ranks is exactly k * P, what one
//   unsharded optimizer holds). Staging: this rank's shard of parameters and of reduced gradients
//   (S floats each) and the round buffers (max(N * R, the largest kReduceToOwner bucket another
//   rank owns) floats each: about bucketCapBytes; a second one only when there are several rounds
//   or staged buckets), so ZeRO-2's gradient memory (P / N + two buckets) whatever the model's
//   size; during consolidateState the gather buffers (k * N * S floats on dstRank, k * S
//   elsewhere). Parameters and grads are the framework's non-owning views (ZeRO stage 3, the
//   parameters sharded too, is FullyShardedModel: fully_sharded.h). Buffers in flight stay alive
//   until their collective completes, so destroying the optimizer with communication in flight
//   (after a failure) is safe. Every buffer and the state are counted (layers/common/memory.h;
//   ZeroStepStats::layerBytes): measured, the optimizer holds exactly the staging and its shard's
//   state, and a step allocates nothing (tests/layers/zero_test.cc).
//
// Not supported (InvalidArgument at construction, or documented): parameters other than fp32 on
//   the CPU (no mixed-precision master weights, no GPU DeviceOps: the optimizer's arithmetic runs
//   on host memory; a GPU framework would stage its shard through the host). Parameter groups
//   differ only in lr and weight decay (torch allows any hyper-parameter per group).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "core/process_group.h"
#include "layers/common/comm_event.h"
#include "layers/common/failure.h"
#include "layers/common/memory.h"
#include "layers/common/parameter.h"
#include "layers/optim/flat_optimizer.h"
#include "layers/optim/optimizer_state.h"
#include "layers/zero/grad_norm.h"

namespace c10d {
namespace zero {

struct ZeroOptions {
  optim::OptimizerOptions optimizer;
  // How gradients reach their owner: reduceScatterTensor in rounds over every rank's shard, or
  // ShardedDDP's bucketed reduce(dst = owner) launched from markReady() so it overlaps backward.
  enum class GradReduction { kReduceScatter, kReduceToOwner };
  GradReduction gradReduction = GradReduction::kReduceScatter;
  size_t bucketCapBytes = 25u << 20;     // kReduceToOwner buckets; the rounds' size (N * R floats)
  Milliseconds timeout = kUnsetTimeout;  // bound for every wait
  // Per-group lr and weight decay (indices into the parameter list; flat_optimizer.h).
  std::vector<optim::ParamGroup> paramGroups;
  // Clip the mean gradient's total norm over every shard before the update (grad_norm.h).
  GradClip clip;
  bool recordComm = false;  // fill ZeroStepStats::comm (timelines; costs a callback per collective)
};

const char* gradReductionName(ZeroOptions::GradReduction mode);  // "reduce_scatter", ...

// What one step() did. Times are wall-clock seconds.
struct ZeroStepStats {
  double commSeconds = 0;           // step() blocked on the gradient reduction and the allgather
  double stepSeconds = 0;           // the optimizer's arithmetic on this rank's shard
  size_t localStateBytes = 0;       // this rank's optimizer state (slots)
  uint64_t step = 0;                // steps taken so far, this one included
  size_t bucketsLaunched = 0;       // collectives that moved gradients (kReduceScatter: the rounds;
                                    //   0 when no parameter has elements)
  size_t bucketsLaunchedEarly = 0;  // kReduceToOwner: launched by markReady(), before step()
  double markWaitSeconds = 0;       // kReduceToOwner: markReady() waited for a staging buffer
  size_t rounds = 0;                // allgather rounds (and kReduceScatter's reduce-scatter rounds)
  size_t stagingBytes = 0;          // the two round buffers
  double gradNorm = 0;              // the mean gradient's total norm before clipping (0: no clip)
  std::vector<layers::CommEvent> comm;  // with recordComm: each collective's launch, completion
  // The layers' own memory in this process after the step, measured (layers/common/memory.h:
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

  // Optional (kReduceToOwner overlaps with it; kReduceScatter just records): parameter i's local
  // gradient is complete for this backward. Same misuse rules as Reducer::markReady. In
  // kReduceToOwner the grads of a launched bucket are read then; the others' in step().
  void markReady(size_t index) C10D_EXCLUDES(mu_);
  // Collective: the framework has written each parameter's local (un-averaged) gradient into its
  // grad tensor. Reduces gradients to their owners and averages (sum / world size), the owner steps
  // its shard with FlatOptimizer, and every rank's parameters end equal to the owners' updated
  // values (allgather in rounds). The grad tensors are only read.
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
  // kReduceToOwner: the buckets' parameter indices, in launch order (empty for kReduceScatter).
  // Parameters with no elements that would be alone in a bucket are in none (nothing to move).
  std::vector<std::vector<size_t>> buckets() const C10D_EXCLUDES(mu_);
  ZeroStepStats lastStats() const C10D_EXCLUDES(mu_);

 private:
  struct Bucket {
    int owner = 0;
    std::vector<size_t> params;  // descending index order (the order backward marks them)
    size_t offset = 0;           // in the owner's chunk
    size_t numel = 0;
    size_t pending = 0;  // parameters not yet marked this step
    std::shared_ptr<Work> work;
  };

  // "parameter 3 ('fc.bias')"
  std::string describe(size_t index) const { return layers::describeParameter(params_, index); }
  void verifyAcrossRanks();
  // The state functions below are called with mu_ held, or by the constructor.
  void partition() C10D_REQUIRES(mu_);
  void buildBuckets() C10D_REQUIRES(mu_);
  void allocateStaging() C10D_REQUIRES(mu_);
  void resetStep() C10D_REQUIRES(mu_);
  // Calls fn(param, paramPos, count, shardPos) for each run of rank r's shard in [begin, end):
  // elements [paramPos, paramPos + count) of the parameter sit at shardPos in the shard.
  template <typename Fn>
  void forEachPiece(int r, size_t begin, size_t end, Fn&& fn) const;
  // The grads of rank r's shard [begin, begin + count) into dst, zero past the shard's end.
  void packGrads(int r, size_t begin, size_t count, float* dst) const;
  // src (rank r's shard [begin, begin + count)) into the parameters' data tensors.
  void unpackParams(int r, size_t begin, size_t count, const float* src) const;
  // A staging buffer free for reuse: waits for the collective still using the older one.
  layers::Floats& acquireStaging() C10D_REQUIRES(mu_);
  void useStaging(const std::shared_ptr<Work>& work) C10D_REQUIRES(mu_);
  void drainStaging() C10D_REQUIRES(mu_);
  void launchReadyBuckets() C10D_REQUIRES(mu_);
  void reduceScatterRounds(ZeroStepStats& st) C10D_REQUIRES(mu_);
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
  std::vector<optim::Span> spans_;           // this rank's shard's parameter-group spans

  mutable Mutex mu_;
  // The two round buffers (kept alive by Works in flight), the collective using each, and the
  // one to use next.
  std::shared_ptr<layers::Floats> staging_[2] C10D_GUARDED_BY(mu_);
  std::shared_ptr<Work> stagingWork_[2] C10D_GUARDED_BY(mu_);
  size_t nextStaging_ C10D_GUARDED_BY(mu_) = 0;
  double markWaitSeconds_ C10D_GUARDED_BY(mu_) = 0;
  layers::CommEventLog events_ C10D_GUARDED_BY(mu_);
  // S: this rank's reduced gradients.
  std::shared_ptr<layers::Floats> shardGrad_ C10D_GUARDED_BY(mu_);
  // S: this rank's parameters, stepped.
  std::shared_ptr<layers::Floats> shardParam_ C10D_GUARDED_BY(mu_);
  std::unique_ptr<optim::FlatOptimizer> optimizer_ C10D_GUARDED_BY(mu_);  // over S_r elements
  std::vector<Bucket> buckets_ C10D_GUARDED_BY(mu_);
  static constexpr size_t kNoBucket = ~size_t{0};
  // Per parameter (kReduceToOwner); kNoBucket: no elements.
  std::vector<size_t> bucketOf_ C10D_GUARDED_BY(mu_);
  std::vector<uint8_t> marked_ C10D_GUARDED_BY(mu_);
  size_t nextBucket_ C10D_GUARDED_BY(mu_) = 0;
  size_t launchedEarly_ C10D_GUARDED_BY(mu_) = 0;
  layers::FailureLatch broken_ C10D_GUARDED_BY(mu_) = layers::FailureLatch("ShardedOptimizer");
  ZeroStepStats lastStats_ C10D_GUARDED_BY(mu_);
};

}  // namespace zero
}  // namespace c10d
