// Reducer: data-parallel gradient averaging with bucketing, PyTorch DDP's C++ Reducer over the
// public ProcessGroup API (so it runs on every backend).
//
// How a framework embeds it
//   Reducer reducer(params, group, options, buffers);  // collective: checks + broadcast from rank
//   0 for each step:
//     reducer.syncBuffers();          // broadcastBuffers: buffers from rank 0 (collective)
//     forward; backward, calling reducer.markReady(i) as parameter i's gradient is complete
//     auto stats = reducer.finalize();  // grads now hold the average over ranks
//     optimizer step
//   Gradient accumulation: run k-1 micro-batches under `auto guard = reducer.noSync();` (markReady
//   and finalize communicate nothing there; the framework accumulates into its grads), then one
//   synced micro-batch reduces the accumulated sums (torch's no_sync()).
//
// Buckets
//   Gradients are packed into buckets, each a contiguous buffer of one (dtype, device), assigned in
//   reverse parameter order (the last layers' gradients are ready first in backward) with the first
//   bucket of each (dtype, device) closed at firstBucketBytes and the rest at bucketCapBytes
//   (c10d/layers/common/bucket_assignment.h). markReady(i) copies grad i into its bucket slot (or,
//   with gradientAsBucketView, the grad already is that slot: gradView(i)); when a bucket's last
//   parameter is marked, the bucket's allreduce (or comm hook) starts at once, asynchronously, so
//   it overlaps the rest of the caller's backward. Buckets are launched in index order on every
//   rank: a bucket that fills before an earlier one waits for it (torch's next_bucket rule), so the
//   collectives match across ranks even when gradients become ready in different orders.
//   Rebuild: during the first synced iteration the Reducer records the order in which gradients
//   became ready; at the end of that finalize() rank 0's order is broadcast and every rank rebuilds
//   its buckets from it (same limits), once, as torch does. Skipped with findUnusedParameters (an
//   iteration's order then misses parameters; torch skips it too) or rebuildBuckets = false.
//
// Averaging and copy-back (finalize)
//   Without a hook: as torch's DDP, each gradient is averaged as it enters its bucket: multiplied
//   by 1 / world size when it is copied in (copy mode; markReady(i, grad) in view mode), divided by
//   the world size in place when it already is the bucket slot (view mode's markReady(i): torch's
//   bucket_view.div_), then the buckets are SUM-allreduced (ReducerOptions::averaging can sum
//   first and divide after). With a hook: the hook's result, as is (comm_hooks.h). Then, unless
//   grads are bucket views, each bucket slot is copied back into the framework's grad.
//
// Unused parameters (findUnusedParameters = true; torch semantics)
//   A parameter not marked in an iteration (nor in the no-sync micro-batches before it) counts as a
//   zero gradient on that rank; finalize() launches the buckets still waiting for such parameters
//   and allreduces a used-map (int32 per parameter, 1 where marked). A parameter used on some ranks
//   gets sum / world size (the ranks that did not use it contribute zeros: torch divides by the
//   world size, not by the number of users). A parameter used on no rank keeps its grad untouched:
//   not copied back, and with gradientAsBucketView its slot is restored to what it held before.
//   A parameter unmarked in the synced iteration but marked in a preceding no-sync micro-batch
//   contributes its accumulated grad (torch: a defined grad is reduced).
//   With findUnusedParameters = false, every parameter must be marked in every synced iteration.
//
// Start-up (constructor, collective over the group)
//   Every rank allgathers its parameter and buffer counts, then every (numel, dtype); any
//   difference is an InvalidArgument on every rank naming the first differing index and rank, the
//   local name, and both ranks' values. Then parameters and buffers are broadcast from rank 0
//   (broadcastCoalesced) and the buckets are built.
//
// Errors (every message names the parameter by index and name, and the group)
//   InvalidArgument: bad options or tensors at construction (data/grad mismatch, a device without
//   DeviceOps, an (op, dtype) the group cannot reduce), a start-up mismatch, markReady out of
//   range, a parameter marked ready twice in one synced iteration, finalize() with unmarked
//   parameters while findUnusedParameters is off (torch's "Expected to have finished reduction in
//   the prior iteration..."), noSync() entered in the middle of a synced iteration, gradView()
//   without gradientAsBucketView. After a failed finalize(), a failed collective or a throwing hook
//   the Reducer is unusable: every later call throws Error quoting the first failure (the
//   collectives of the other ranks may no longer match). The other errors leave the state
//   unchanged.
//
// Threads and blocking
//   The Reducer starts no threads. markReady() may be called concurrently from several threads
//   (autograd worker threads): the Reducer's state and the collectives it issues are serialized by
//   an internal mutex, and bucket launches happen on whichever thread marks the bucket's last
//   parameter (or in finalize()). Every other method must be called from one thread at a time and
//   not while a markReady() of the same iteration may still run (call finalize() after backward
//   has returned). The Reducer issues collectives on the group from those threads: other ops on the
//   same group must not be issued concurrently with backward (use a second group for other
//   traffic), since every rank must issue collectives in the same order.
//   markReady() does not wait for communication (a backend may spend a bounded moment issuing).
//   The constructor, syncBuffers() and finalize() wait for their collectives, each wait bounded by
//   options.timeout (kUnsetTimeout: the op's own timeout, i.e. the group's), throwing TimeoutError.
//
// Memory
//   Parameters, grads and buffers are non-owning views: the framework keeps them alive and in place
//   for the Reducer's lifetime. Buckets are owned by the Reducer; a bucket's memory also stays
//   alive until its collective completes, so destroying a Reducer with communication in flight is
//   safe (nothing is copied back). With gradientAsBucketView, gradView(i) points into a bucket:
//   valid until the buckets are rebuilt (IterationStats::rebuiltBuckets, layoutVersion() changes;
//   the contents move with them) or the Reducer is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/bucket_assignment.h"
#include "c10d/layers/common/comm_event.h"
#include "c10d/layers/common/device_ops.h"
#include "c10d/layers/common/failure.h"
#include "c10d/layers/common/flat_buffer.h"
#include "c10d/layers/common/parameter.h"
#include "c10d/layers/ddp/comm_hooks.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace ddp {

// A model parameter as the Reducer sees it (shared with the ZeRO layer:
// c10d/layers/common/parameter.h).
using Parameter = layers::Parameter;

// A module buffer (running statistics, ...): broadcast from rank 0, never reduced.
struct NamedBuffer {
  std::string name;
  Tensor data;
};

struct ReducerOptions {
  size_t bucketCapBytes = 25u << 20;   // torch's bucket_cap_mb = 25
  bool recordComm = false;             // fill IterationStats::comm (timelines)
  size_t firstBucketBytes = 1u << 20;  // torch's _DEFAULT_FIRST_BUCKET_BYTES
  bool gradientAsBucketView = false;
  bool findUnusedParameters = false;
  // Broadcast buffers from rank 0 in syncBuffers() (start-up always broadcasts them).
  bool broadcastBuffers = true;
  // Rebuild the buckets once from the first synced iteration's ready order.
  bool rebuildBuckets = true;
  // Without a comm hook, how the average is formed (floating dtypes; integer buckets always sum,
  // then divide):
  //   kScaleThenSum (default, torch's DDP): each gradient is averaged as it enters its bucket,
  //     multiplied by 1 / world size (in the dtype's compute type, DeviceOps::multiply) when copied
  //     in, divided by the world size (DeviceOps::divide) when it already is the slot; then the
  //     buckets are SUM-allreduced: the same bits as torch's DDP over the same allreduce;
  //   kSumThenDivide: SUM-allreduce, then divide by the world size (rounds once per element
  //     instead of once per rank; at world size 3 ~60% of float elements differ from torch's in
  //     the last bit).
  enum class Averaging { kScaleThenSum, kSumThenDivide };
  Averaging averaging = Averaging::kScaleThenSum;
  CommHook commHook;  // empty: averaging as above
  // Bound for each wait in the constructor, syncBuffers() and finalize(); kUnsetTimeout: the op's.
  Milliseconds timeout = kUnsetTimeout;
  // Memory operations for the parameters' devices; null: host memory (CPU parameters only).
  std::shared_ptr<layers::DeviceOps> deviceOps;
};

struct BucketInfo {
  DataType dtype = DataType::kFloat32;
  Device device = Device::cpu();
  std::vector<size_t> parameters;  // parameter indices, in buffer order
  size_t numel = 0;
  size_t bytes = 0;
};

// What one finalize() did. Times are wall-clock seconds.
struct IterationStats {
  uint64_t iteration = 0;           // synced iterations finalized so far, this one included
  bool synced = false;              // false: finalize() under noSync (nothing communicated)
  std::vector<size_t> bucketBytes;  // per bucket, in launch order
  size_t bucketsLaunchedEarly = 0;  // launched by markReady(), before finalize() began
  double backwardSeconds = 0;       // first markReady() -> finalize() start
  double commSeconds = 0;           // sum over buckets of launch -> completion
  double overlappedSeconds = 0;     // sum over buckets of launch -> min(completion, finalize start)
  // Buckets whose allreduce had completed when finalize() began: the communication backward hid
  // completely. A backend that makes progress only inside wait() leaves it at 0.
  size_t bucketsDoneBeforeFinalize = 0;
  double finalizeWaitSeconds = 0;       // finalize() blocked on communication (exposed comm)
  size_t locallyUnusedParameters = 0;   // findUnusedParameters: not marked on this rank
  size_t globallyUnusedParameters = 0;  // findUnusedParameters: marked on no rank
  bool rebuiltBuckets = false;          // the buckets were rebuilt at the end of this finalize()
  std::vector<layers::CommEvent> comm;  // recordComm: each bucket's allreduce, launch to completion
};

class Reducer {
 public:
  // Collective over `group` (see the header comment). Throws InvalidArgument for bad arguments or a
  // start-up mismatch, TimeoutError / CommError from the collectives.
  Reducer(std::vector<Parameter> parameters, std::shared_ptr<ProcessGroup> group,
          ReducerOptions options = {}, std::vector<NamedBuffer> buffers = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Parameter `index`'s gradient is complete for this backward. Thread-safe (see header comment).
  // With gradientAsBucketView the gradient is in gradView(index) (torch's steady state, where the
  // grad is the bucket view).
  void markReady(size_t index) C10D_EXCLUDES(mu_);
  // gradientAsBucketView only: the gradient is in `grad`, outside the bucket (torch's first step,
  // or every step after zero_grad(set_to_none=True)). It is copied into gradView(index) at once,
  // scaled by 1 / world size (so `grad` may be freed on return), and the framework should use
  // gradView(index) as the gradient from now on (torch sets grad = bucket view). Under noSync only
  // the use is recorded: a gradient accumulated outside the bucket is passed in the synced
  // iteration.
  void markReady(size_t index, const Tensor& grad) C10D_EXCLUDES(mu_);

  // Ends the iteration: launches what is left (findUnusedParameters), waits for every bucket,
  // averages, copies back. Under noSync: ends the micro-batch, communicates nothing.
  IterationStats finalize() C10D_EXCLUDES(mu_);

  // Gradient accumulation. While sync is off, markReady() only records that the parameter was used
  // and finalize() communicates nothing. Turning it off in the middle of a synced iteration (some
  // parameters marked, finalize() not called) is an InvalidArgument.
  void setRequireGradSync(bool sync) C10D_EXCLUDES(mu_);
  bool requireGradSync() const C10D_EXCLUDES(mu_);
  class NoSyncGuard {
   public:
    NoSyncGuard(NoSyncGuard&& o) noexcept : reducer_(o.reducer_), previous_(o.previous_) {
      o.reducer_ = nullptr;
    }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(NoSyncGuard&&) = delete;
    ~NoSyncGuard();  // restores the previous setting

   private:
    friend class Reducer;
    NoSyncGuard(Reducer* r, bool previous) : reducer_(r), previous_(previous) {}
    Reducer* reducer_;
    bool previous_;
  };
  // Scoped setRequireGradSync(false), like torch's `with ddp.no_sync():`.
  NoSyncGuard noSync() C10D_EXCLUDES(mu_);

  // With broadcastBuffers (and buffers given, world size > 1): every buffer <- rank 0's, as torch
  // does before each forward. Collective; blocks until done.
  void syncBuffers() C10D_EXCLUDES(mu_);

  // gradientAsBucketView only: where the framework must keep parameter `index`'s gradient.
  Tensor gradView(size_t index) const C10D_EXCLUDES(mu_);
  // The current bucket layout (changes once, when rebuilt) and its version (starts at 0).
  std::vector<BucketInfo> buckets() const C10D_EXCLUDES(mu_);
  uint64_t layoutVersion() const C10D_EXCLUDES(mu_);
  IterationStats lastStats() const C10D_EXCLUDES(mu_);
  size_t numParameters() const { return params_.size(); }
  const ReducerOptions& options() const { return options_; }
  ProcessGroup& group() const { return *group_; }

 private:
  struct Bucket {
    layers::FlatBuffer flat;
    std::vector<size_t> params;
    size_t pending = 0;  // parameters not yet marked this iteration
    bool ready = false;
    bool launched = false;
    std::shared_ptr<Work> work;
    int64_t launchNs = 0;
    std::shared_ptr<std::atomic<int64_t>> doneNs;  // set by the Work's callback (or finalize)
  };
  struct Locator {
    size_t bucket = 0;
    size_t slot = 0;
  };

  // "parameter 3 ('fc.bias')"
  std::string describe(size_t index) const { return layers::describeParameter(params_, index); }
  void validateArguments() const;
  void verifyAcrossRanks();
  void broadcastInitialState();
  // The state functions below are called with mu_ held, or by the constructor.
  // The buckets `order` gives (no allocation), and those buckets allocated as buckets_.
  std::vector<layers::BucketSpec> assign(const std::vector<size_t>& order) const;
  void buildBuckets(const std::vector<layers::BucketSpec>& assignment) C10D_REQUIRES(mu_);
  void resetIteration() C10D_REQUIRES(mu_);
  void launchReadyBuckets() C10D_REQUIRES(mu_);
  void launch(size_t b) C10D_REQUIRES(mu_);
  void prepareUnmarked(size_t param, const Tensor& slot) C10D_REQUIRES(mu_);
  void markReadyLocked(size_t index, const Tensor* grad) C10D_REQUIRES(mu_);
  // `external`: the gradient when it is not the slot (null: params_[param].grad in copy mode, the
  // slot itself with gradientAsBucketView).
  void enterBucket(size_t param, const Tensor& slot, const Tensor* external) C10D_REQUIRES(mu_);
  bool scalesOnEntry(DataType dtype) const;
  // Starts the SUM allreduce of the used-parameter map, staged in *staged.
  std::shared_ptr<Work> launchUsedMap(layers::FlatBuffer* staged) C10D_REQUIRES(mu_);
  void maybeRebuild(IterationStats& stats) C10D_REQUIRES(mu_);
  void setSync(bool sync) C10D_REQUIRES(mu_);
  void waitWork(Work& work);  // bounded by options_.timeout
  // A small int64 collective staged through device memory: allgather / broadcast.
  std::vector<int64_t> allgatherInts(const std::vector<int64_t>& mine);
  std::vector<int64_t> broadcastInts(std::vector<int64_t> values);

  std::vector<Parameter> params_;
  std::vector<NamedBuffer> buffers_;
  const std::shared_ptr<ProcessGroup> group_;
  const ReducerOptions options_;
  std::shared_ptr<layers::DeviceOps> ops_;
  Device commDevice_;  // where small metadata collectives run (the first parameter's device)

  mutable Mutex mu_;
  std::vector<Bucket> buckets_ C10D_GUARDED_BY(mu_);
  std::vector<Locator> locators_ C10D_GUARDED_BY(mu_);
  uint64_t layoutVersion_ C10D_GUARDED_BY(mu_) = 0;
  bool requireSync_ C10D_GUARDED_BY(mu_) = true;
  layers::FailureLatch broken_ C10D_GUARDED_BY(mu_) = layers::FailureLatch("Reducer");

  // Per synced iteration.
  std::vector<uint8_t> marked_ C10D_GUARDED_BY(mu_);
  size_t numMarked_ C10D_GUARDED_BY(mu_) = 0;
  size_t nextBucket_ C10D_GUARDED_BY(mu_) = 0;
  int64_t backwardStartNs_ C10D_GUARDED_BY(mu_) = 0;
  std::vector<size_t> readyOrder_ C10D_GUARDED_BY(mu_);  // first synced iteration, for the rebuild
  // View mode: slots zeroed as unused, to restore.
  std::map<size_t, layers::FlatBuffer> saved_ C10D_GUARDED_BY(mu_);
  // Since the last synced finalize (no-sync micro-batches included).
  std::vector<uint8_t> usedSinceSync_ C10D_GUARDED_BY(mu_);

  bool rebuilt_ C10D_GUARDED_BY(mu_) = false;
  uint64_t syncedIterations_ C10D_GUARDED_BY(mu_) = 0;
  IterationStats lastStats_ C10D_GUARDED_BY(mu_);
};

}  // namespace ddp
C10D_NAMESPACE_END
}  // namespace c10d
