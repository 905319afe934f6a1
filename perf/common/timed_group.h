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
// Forwarding as c10d/core/forwarding_group.h: sub-groups are plain groups of the inner backend, not
// timed; errors are the inner group's; an op is validated twice, which costs nothing measurable
// next to a gradient bucket. An op the inner group refuses at issue is recorded as an empty
// interval.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/forwarding_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

class TimedGroup : public ForwardingGroup {
 public:
  explicit TimedGroup(std::shared_ptr<ProcessGroup> inner);

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
  // Every op: recorded, then issued on the inner group.
  std::shared_ptr<Work> forward(OpType op, Issue issue) override;

 private:
  struct Interval {
    int64_t issueNs = 0;
    int64_t doneNs = 0;  // 0 until the completion callback ran
  };

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
C10D_NAMESPACE_END
}  // namespace c10d
