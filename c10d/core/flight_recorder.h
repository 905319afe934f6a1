// FlightRecorder: a group's ring of its last N ops, and the per-op statistics built from them.
//
// Always on and cheap: ProcessGroup records each op as it is issued (its OpDesc and the issue
// time); the Work reports when the backend started it (Work::markStarted) and when it completed
// or failed (Work::finish). An op is one fixed slot of a preallocated ring (capacity from
// C10D_FLIGHT_RECORDER_SIZE); the oldest is overwritten. Updates for an op already overwritten
// are ignored.
//
// Reading: snapshot() copies the ring; toJson() writes the dump format read by tools/c10d_trace
// (one object per rank and group: group, backend, rank, size, pid, host, reason, the clock
// offset, then "entries", oldest first, each with seq, coll_seq, op, dtype, count, root,
// reduce_op, peer, tensors, send/recv counts, state issued|started|completed|failed, issue / start
// / end times in microseconds since the epoch (0 = not yet) and the error). stats() sums every
// op completed so far (not only those still in the ring; an op that completes after
// `capacity` newer ops overwrote its slot is not counted): counts, bytes, p50/p99 time.
//
// Threads: every method is thread-safe (one SpinLock, held for a few stores per update and for
// the copy in snapshot(); never while calling out or formatting). Nothing blocks beyond that; no
// threads are started. Cost per op on the issuing path: record(), onStart() and onEnd() take the
// lock once each (one exchange and one store: no library call, no syscall); an op completed where
// it was issued updates its start and end in one onEnd().
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/spin_lock.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/op_desc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// Per-op statistics of a group (ProcessGroup::stats()).
struct OpStats {
  struct Row {
    OpType op = OpType::kUnknown;
    uint64_t count = 0;   // ops completed (successfully or not)
    uint64_t failed = 0;  // of which completed with an error
    uint64_t bytes = 0;   // payload bytes on this rank (count * element size; alltoall: sent)
    double p50Us = 0;     // issue -> completion, from a log-scale histogram (within ~10%)
    double p99Us = 0;
    double maxUs = 0;
  };
  std::string group;
  int rank = 0;
  std::vector<Row> rows;  // ops seen at least once, in OpType order
  // A table: op, count, failed, bytes, p50, p99, max (us).
  std::string table() const;
};

class FlightRecorder {
 public:
  enum class State : uint8_t { kIssued, kStarted, kCompleted, kFailed };
  static const char* toString(State s);

  struct Entry {
    OpDesc desc;
    int64_t issueNs = 0;  // steady clock; 0 = not yet
    int64_t startNs = 0;
    int64_t endNs = 0;
    State state = State::kIssued;
    std::string error;
  };

  // Identifies a recorded op for onStart/onEnd: its index in this recorder's issue order.
  using Id = uint64_t;
  static constexpr Id kNoId = ~Id(0);

  FlightRecorder(size_t capacity, std::string group, std::string backend, int rank, int size);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  size_t capacity() const { return capacity_; }
  const std::string& group() const { return group_; }

  // Records an op issued at `issueNs` (steady clock); kNoId when the capacity is 0.
  Id record(const OpDesc& desc, int64_t issueNs);
  void onStart(Id id, int64_t ns);
  // `error` null = success. `startNs` != 0: the op's start too, for an op whose start was not
  // recorded yet (one update for an op run to completion where it was issued).
  void onEnd(Id id, int64_t ns, const std::exception_ptr& error, int64_t startNs = 0);

  // The ring, oldest op first.
  std::vector<Entry> snapshot() const;
  // The oldest op not completed yet (the one a hang is stuck in), else the newest; false when
  // nothing was recorded.
  bool position(Entry* out) const;
  OpStats stats() const;
  // The dump (see header comment). `reason`: why it was written ("timeout", "on demand").
  std::string toJson(const std::string& reason) const;
  // Writes toJson() to `path` (through a temporary file and a rename, so a reader never sees half
  // a file); throws Error naming the path and errno.
  void dump(const std::string& path, const std::string& reason) const;
  // A few lines for stderr: the last `n` ops with state and times.
  std::string summary(size_t n) const;

  // steady clock now, in ns (c10d/base/fast_clock.h: from the TSC where it is invariant).
  static int64_t nowNs();

 private:
  // Log-scale duration histogram: 8 buckets per power of two of nanoseconds.
  static constexpr int kSubBuckets = 8;
  static constexpr int kBuckets = 64 * kSubBuckets;
  struct OpCounters {
    uint64_t count = 0, failed = 0, bytes = 0;
    int64_t maxNs = 0;
    std::array<uint32_t, kBuckets> hist{};
  };
  static int bucketOf(int64_t ns);
  static double bucketMidUs(int b);

  const std::string group_;
  const std::string backend_;
  const int rank_;
  const int size_;
  // ring_.size(), which never changes: readable without the lock.
  const size_t capacity_;

  mutable SpinLock mu_;
  std::vector<Entry> ring_ C10D_GUARDED_BY(mu_);  // slot = id % capacity
  Id next_ C10D_GUARDED_BY(mu_) = 0;
  std::array<OpCounters, static_cast<size_t>(OpType::kUnknown) + 1> counters_ C10D_GUARDED_BY(mu_);
};

C10D_NAMESPACE_END
}  // namespace c10d
