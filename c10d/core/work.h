// Work: the handle every collective returns.
//
// Ownership and threads
//   A Work is shared between the caller and the backend that completes it. The backend finishes it
//   exactly once, from any thread (its I/O loop, worker pool or watchdog), by calling finish()
//   (protected: see "the backend side" below).
//   Everything here is thread-safe. Work starts no threads.
//
// States
//   pending -> completed successfully, or completed with an exception (the op's error, a peer's
//   failure delivered to every pending Work, a timeout raised by the backend, or abort()).
//
// wait(timeout)
//   Blocks until the Work completes or `timeout` passes. kUnsetTimeout (the default) means the
//   op's own timeout (from its options, or the group's default); nothing ever waits forever.
//   - completed successfully: returns.
//   - completed with an error: rethrows that error (CommError naming the peer for a dead peer,
//     TimeoutError if the backend timed the op out, Error otherwise).
//   - timeout passes first: throws TimeoutError naming op, sequence number, group and the
//     timeout. The Work itself stays pending (the backend may still complete or fail it; its
//     watchdog is what fails a stuck op for every waiter).
//
// Diagnostics
//   A Work issued through a ProcessGroup updates its entry in the group's flight recorder when the
//   backend starts it (markStarted) and when it completes; an error that is a TimeoutError or
//   CommError goes through the group's GroupDiagnostics::onFailure first (desync report, dump).
//   wait() with kUnsetTimeout, when the op's timeout passes, throws its TimeoutError through
//   onFailure too (so it carries the desync report; up to C10D_DESYNC_WAIT_MS later), or the
//   backend's own error if the backend failed the op meanwhile.
//
// Callbacks
//   then(cb) runs cb exactly once after completion: on the completing thread, or at once on the
//   caller's thread if the Work is already complete. Callbacks must not throw (an exception
//   escaping one is swallowed and reported to stderr) and must not block for long.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"
#include "c10d/core/op_desc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class GroupDiagnostics;

class Work : public std::enable_shared_from_this<Work> {
 public:
  using Callback = std::function<void(Work&)>;

  // `group` names the process group in messages (e.g. "gloo:world" or "gloo:group1").
  Work(OpType op = OpType::kUnknown, uint64_t seq = 0, std::string group = "",
       Milliseconds timeout = kDefaultTimeout);
  virtual ~Work();
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  OpType opType() const { return op_; }
  uint64_t sequenceNumber() const { return seq_; }
  const std::string& groupName() const { return group_; }
  Milliseconds timeout() const { return timeout_; }

  bool isCompleted() const C10D_EXCLUDES(mu_);
  // True when completed without an error.
  bool isSuccess() const C10D_EXCLUDES(mu_);
  // The error it completed with; null while pending or on success.
  std::exception_ptr exception() const C10D_EXCLUDES(mu_);

  // See the header comment. Returns true (kept for torch's signature).
  virtual bool wait(Milliseconds timeout = kUnsetTimeout) C10D_EXCLUDES(mu_);
  // For device work: make the caller's current stream wait for the op. CPU: no-op.
  virtual void synchronize() {}
  // Gives up on the op: completes the Work with an Error ("aborted") if still pending, and lets
  // the backend cancel what it can (onAbort()).
  virtual void abort() C10D_EXCLUDES(mu_);

  // Runs `cb` once after completion (see header comment).
  void then(Callback cb) C10D_EXCLUDES(mu_);
  // A future that becomes ready (or holds the error) on completion.
  std::shared_future<void> future() C10D_EXCLUDES(mu_);

  // For recv from any source: the rank the message came from; -1 otherwise or while pending.
  int sourceRank() const { return sourceRank_.load(); }

  // A message prefix naming the op: "allreduce #12 in group gloo:world".
  std::string describe() const;

  // What the op looked like on this rank (count, dtype, root, ...). Set by ProcessGroup before the
  // Work is returned to the caller (a Work made elsewhere has only op and seq); read it from the
  // caller's side or from callbacks registered after that, never from the backend's threads.
  const OpDesc& desc() const { return desc_; }

 protected:
  // ---- the backend side ----
  // Only whoever runs the op calls these (as torch's Work keeps finish() protected): a backend's
  // own subclass of Work, or BackendWork (c10d/core/backend_work.h), which makes them public. A
  // caller gets a plain Work and only waits on it.

  // Completes the Work; the first call wins, later ones are ignored. Returns whether this call
  // completed it. Runs callbacks on the calling thread after releasing the lock.
  bool finish(std::exception_ptr error = nullptr) C10D_EXCLUDES(mu_);
  void setSourceRank(int r) { sourceRank_.store(r); }

  // The op began running (its flight record's start time). Only the first call counts.
  // `ns`: when (steady clock ns, e.g. the issue time of an op run inline at issue); 0 = now.
  void markStarted(int64_t ns = 0) C10D_EXCLUDES(mu_);
  // markStarted() and finish() for a Work that no other thread can reach yet: a backend running
  // the op inline, on the issuing thread, before its do*() returns the Work (no callbacks, future
  // or waiters can exist). The same effects without the lock or the wake-up (unchecked: safe
  // because no other thread can see the Work yet). The start reaches the flight record with the
  // end (one recorder update for the op), or at publishStartUnshared(), which a backend calls
  // before another thread may see the Work (an inline op handed to an engine thread): until then
  // a snapshot shows the op issued, not started.
  void markStartedUnshared(int64_t ns) C10D_NO_THREAD_SAFETY_ANALYSIS;
  void publishStartUnshared() C10D_NO_THREAD_SAFETY_ANALYSIS;
  void finishUnshared(std::exception_ptr error = nullptr) C10D_NO_THREAD_SAFETY_ANALYSIS;

  // Called once by abort() while the Work is still pending; backends override to cancel.
  virtual void onAbort() {}

 private:
  friend class ProcessGroup;
  void setDesc(OpDesc d) { desc_ = std::move(d); }
  // Links the Work to its entry `recordId` in `diag`'s flight recorder; a Work that already
  // started or completed reports that at once.
  void attachDiagnostics(std::shared_ptr<GroupDiagnostics> diag, uint64_t recordId)
      C10D_EXCLUDES(mu_);
  // attachDiagnostics() for a Work no other thread can see yet (ProcessGroup::linkWork), without
  // the lock and without owning `diag`: valid while the group lives, which covers every use by a
  // Work completed before the group returns it. retainDiagnostics() (track()) makes a Work still
  // pending own it, since it may complete or time out in wait() after the group is gone.
  // Unchecked: writes diag_ and recordId_ without the lock, safe because no other thread can see
  // the Work yet.
  void linkDiagnostics(GroupDiagnostics* diag, uint64_t recordId) C10D_NO_THREAD_SAFETY_ANALYSIS;
  void retainDiagnostics(const std::shared_ptr<GroupDiagnostics>& diag) C10D_EXCLUDES(mu_);
  // error_ for wait()'s fast path, read without the lock (unchecked): safe once done_ was seen set
  // (acquire), since error_ never changes after finish() sets done_.
  const std::exception_ptr& finalError() const C10D_NO_THREAD_SAFETY_ANALYSIS { return error_; }

 private:
  const OpType op_;
  const uint64_t seq_;
  const std::string group_;
  const Milliseconds timeout_;
  std::atomic<int> sourceRank_{-1};
  OpDesc desc_;

  mutable Mutex mu_;
  // Made by the first wait() that blocks: most Works (every op a backend completes before
  // returning it) are never waited on, and constructing and destroying a condition variable was
  // a measurable part of a small op (pthread_cond_destroy alone: ~4% of a one-rank 64 B
  // allreduce's samples).
  std::unique_ptr<std::condition_variable> cv_ C10D_GUARDED_BY(mu_);
  bool completed_ C10D_GUARDED_BY(mu_) = false;
  // completed_, readable without mu_ (wait()'s fast path): set (release) as finish()'s last
  // access to the Work, after error_ is final and the callbacks ran.
  std::atomic<bool> done_{false};
  bool aborting_ C10D_GUARDED_BY(mu_) = false;  // abort() calls onAbort() once
  std::exception_ptr error_ C10D_GUARDED_BY(mu_);
  std::vector<Callback> callbacks_ C10D_GUARDED_BY(mu_);
  std::unique_ptr<std::promise<void>> promise_ C10D_GUARDED_BY(mu_);
  std::shared_future<void> future_ C10D_GUARDED_BY(mu_);
  GroupDiagnostics* diag_ C10D_GUARDED_BY(mu_) = nullptr;  // see linkDiagnostics
  // Keeps diag_ alive if set.
  std::shared_ptr<GroupDiagnostics> diagOwner_ C10D_GUARDED_BY(mu_);
  uint64_t recordId_ C10D_GUARDED_BY(mu_) = ~uint64_t(0);
  int64_t startNs_ C10D_GUARDED_BY(mu_) = 0;  // steady clock, 0 = not yet
  // markStartedUnshared() set startNs_ without telling the flight recorder yet.
  bool startUnpublished_ C10D_GUARDED_BY(mu_) = false;
  int64_t endNs_ C10D_GUARDED_BY(mu_) = 0;
};

// A Work that completes when all of `parts` complete; its error is the first part's error (in
// order). Used for startCoalescing()/endCoalescing() and for ops built from several sub-ops.
std::shared_ptr<Work> makeCompositeWork(std::vector<std::shared_ptr<Work>> parts, OpType op,
                                        uint64_t seq, std::string group, Milliseconds timeout);

// A Work already completed (successfully when `error` is null).
std::shared_ptr<Work> makeCompletedWork(OpType op, uint64_t seq, std::string group,
                                        std::exception_ptr error = nullptr);

C10D_NAMESPACE_END
}  // namespace c10d
