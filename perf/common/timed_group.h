// TimedGroup: a ProcessGroup that forwards every call to another group and records when each
// collective was issued and when it completed, so that a benchmark can see how long the network
// was busy during a step without instrumenting the code that issues the collectives (the DDP
// Reducer and the ZeRO optimizer issue theirs themselves).
//
// What is recorded
//   For every op issued through this group between reset() and collect(): the issue time (just
//   before the inner group's method is called) and the completion time (the inner Work's then()
//   callback, on the backend's thread), both steady_clock. collect() returns the union of those
//   [issue, completion] intervals: the time during which at least one op was in flight (queued or
//   running). Backends run a group's collectives in issue order, so this is the communication
//   time of a step, without the gaps where nothing was in flight (the caller still computing the
//   next bucket). Barriers count like any op: issue them on the inner group to keep them out.
//
// Threads
//   Starts none. Calls may come from the threads that drive the inner group (one at a time, as any
//   ProcessGroup); completion callbacks come from the inner backend's threads, and the record is
//   guarded by a mutex. collect() waits, bounded by `timeout`, for the callbacks of every recorded
//   op: Work::wait() may return before its callbacks have run.
//
// Sub-groups (newGroup / split) are plain groups of the inner backend, not timed. Errors are the
// inner group's, unchanged; this group's own sequence numbers and validation run first (so an op
// is validated twice, which costs nothing measurable next to a gradient bucket). An op the inner
// group refuses at issue is recorded as an empty interval.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "c10d/process_group.h"
#include "c10d/thread_annotations.h"

namespace c10d {
namespace perf {

class TimedGroup : public ProcessGroup {
 public:
  explicit TimedGroup(std::shared_ptr<ProcessGroup> inner);

  std::string backendName() const override { return inner_->backendName(); }
  std::string describe() const override { return inner_->describe(); }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override {
    return inner_->supports(op, dtype, device);
  }
  bool supportsDevice(Device device) const override { return inner_->supportsDevice(device); }
  void shutdown() override { inner_->shutdown(); }
  const std::shared_ptr<ProcessGroup>& inner() const { return inner_; }

  // Forgets what was recorded. Call with no op of this group in flight.
  void reset();

  struct Timeline {
    size_t ops = 0;          // ops recorded
    double busySeconds = 0;  // union of their [issue, completion] intervals
    double spanSeconds = 0;  // first issue -> last completion
  };
  // The ops recorded since reset(), once every one of them has completed and its callback has
  // run. Throws TimeoutError if that takes longer than `timeout` (an op still in flight).
  Timeline collect(Milliseconds timeout);

 protected:
  std::shared_ptr<Work> doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                             const AllreduceCoalescedOptions& opts,
                                             uint64_t seq) override;
  std::shared_ptr<Work> doReduce(Tensor tensor, const ReduceOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doAllgather(const std::vector<Tensor>& outputs, Tensor input,
                                    const AllgatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doAllgatherIntoTensor(Tensor output, Tensor input,
                                              const AllgatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doGather(const std::vector<Tensor>& outputs, Tensor input,
                                 const GatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                  const ScatterOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doReduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                        const ReduceScatterOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doReduceScatterTensor(Tensor output, Tensor input,
                                              const ReduceScatterOptions& opts,
                                              uint64_t seq) override;
  std::shared_ptr<Work> doAlltoall(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs, const AllToAllOptions& opts,
                                   uint64_t seq) override;
  std::shared_ptr<Work> doAlltoallSingle(Tensor output, Tensor input,
                                         const std::vector<size_t>& outputSplits,
                                         const std::vector<size_t>& inputSplits,
                                         const AllToAllOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doBarrier(const BarrierOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doSend(Tensor tensor, int dstRank, const SendRecvOptions& opts,
                               uint64_t seq) override;
  std::shared_ptr<Work> doRecv(Tensor tensor, int srcRank, const SendRecvOptions& opts,
                               uint64_t seq) override;
  void doStartCoalescing() override;
  std::shared_ptr<Work> doEndCoalescing(std::vector<std::shared_ptr<Work>> works,
                                        uint64_t seq) override;

 private:
  // Records the op that `issue` starts on the inner group (see the header comment).
  template <typename Issue>
  std::shared_ptr<Work> timed(Issue&& issue);

  struct Interval {
    int64_t issueNs = 0;
    int64_t doneNs = 0;  // 0 until the completion callback ran
  };

  const std::shared_ptr<ProcessGroup> inner_;
  // Shared with the callbacks, which may outlive this group (a Work completed after shutdown).
  struct Record {
    Mutex mu;
    std::condition_variable cv;
    // Bumped by reset(): late callbacks of older ops are dropped.
    uint64_t generation C10D_GUARDED_BY(mu) = 0;
    std::vector<Interval> intervals C10D_GUARDED_BY(mu);
  };
  const std::shared_ptr<Record> record_;
};

}  // namespace perf
}  // namespace c10d
