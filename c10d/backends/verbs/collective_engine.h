// CollectiveEngine: runs one group's collectives asynchronously, one at a time, in issue order.
//
// Thread: one, "c10d-verbs-coll", started by the constructor and joined by stop() / the
// destructor. It owns the collective channel of the transport whenever it runs an op.
//
// submit() returns at once with the op's Work, pending; the engine thread completes ops in the
// order they were submitted, so Works complete in issue order (as NCCL ops on one stream). A
// collective never blocks the caller waiting for a peer: that is what makes overlap possible
// (start a bucket's allreduce, keep computing).
//
// Fast path (C10D_INLINE_BYTES, C10D_INLINE_US): a hand-off to another thread costs a wake-up on
// each side, more than a whole small op between ready peers. So when nothing is queued or running
// and the op moves at most C10D_INLINE_BYTES (default 1 MiB), the caller's thread starts it
// itself, on the engine's Fiber (fiber.h). If the op would have to wait for a peer — it is about
// to sleep, or C10D_INLINE_US (default 100 us) have passed since it started and it still waits (an
// shm barrier's spin phase ends there too) — the fiber is suspended where it stands and handed to
// the engine thread, which resumes it; submit() then returns the pending Work. So the caller is
// never held past about C10D_INLINE_US (plus one poll of the transport, or one shm step of the
// op's work: a 256 KiB chunk), and an op whose peers are ready completes before submit() returns,
// with no thread switch. C10D_INLINE_BYTES=0 turns the fast path off.
// Catching up: once ops queue (one handed off because a peer was late, and the caller issued more
// meanwhile), every later op would go through the thread too, each paying a wake-up on both
// sides, for as long as the caller keeps ops in flight (a convoy). So a small op issued while
// the thread works through small ops only waits for it (yielding) and then runs inline, as long as
// the thread completes an op at least every C10D_INLINE_US; it is queued at once when a large op
// is ahead, and when the thread stalls that long (a late peer) it is queued, as are later ops
// until the thread completes its next op (so a caller waits out at most one stall per op).
// A group of one never waits for a peer, so its small ops run straight on the caller's stack,
// without the fiber (it would only cost its switches). So do every group's small ops with
// C10D_INLINE_US=-1 (`direct`): they never hand off, so a late peer holds the caller, as in a
// synchronous engine (for single-threaded programs, and to measure what the engine costs).
//
// Errors: the op's body reports its error as an exception_ptr; the engine completes the Work with
// it. stop() fails queued ops with Error("... the group was shut down") and makes the running op
// (and a suspended one) fail promptly at its next poll (aborting()). Completion order is kept
// except at shutdown, where queued ops may fail before an op still running inline finishes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "c10d/backends/verbs/fiber.h"
#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

// Lets an op that runs on the caller's thread give itself to the engine thread (see above).
// Used by Comm between polls; not thread-safe (the op's own thread only).
class Handoff {
 public:
  // Whether the op still runs on the caller's thread.
  bool inlined() const { return fiber_ != nullptr; }
  // Past the inline budget: time to hand off before waiting any longer.
  // When an inline op's budget ends (far future once handed off): a wait's spin phase ends there.
  Clock::time_point until() const { return inlined() ? until_ : Clock::time_point::max(); }
  bool due(Clock::time_point now) const { return now >= until(); }
  // Suspends the op; it continues on the engine thread when this returns. No-op once handed off.
  void handOff();

 private:
  friend class CollectiveEngine;
  Fiber* fiber_ = nullptr;
  Clock::time_point until_;
};

class CollectiveEngine {
 public:
  // Runs one op to completion and returns its error (null on success). `handoff` is non-null
  // while the op runs on the caller's thread.
  using Body = std::function<std::exception_ptr(Handoff* handoff)>;

  // direct: small ops run on the caller's stack and never hand off (a group of one, or
  // C10D_INLINE_US=-1). sliceUs: the thread's scheduler slice (requestShortSlice; 0: default).
  CollectiveEngine(std::string group, size_t inlineBytes, int inlineUs, bool direct = false,
                   int sliceUs = 0);
  ~CollectiveEngine();
  CollectiveEngine(const CollectiveEngine&) = delete;
  CollectiveEngine& operator=(const CollectiveEngine&) = delete;

  // Queues (or runs, see the fast path) `body` for `work`, which moves `bytes` bytes; `now` is
  // the issue time. `body` is any callable like Body; it is type-erased (allocated) only when
  // queued: the inline fast path moves it onto the fiber's stack instead. `work` must be new (no
  // other thread can reach it): an op that completes inline finishes it with
  // Work::finishUnshared(). The engine takes a reference to it only when it queues the op or an
  // inline op hands off (an op completed inline costs no reference count traffic).
  template <typename F>
  void submit(const std::shared_ptr<BackendWork>& work, size_t bytes, Clock::time_point now,
              F&& body) C10D_EXCLUDES(mu_);
  // Fails what is queued, interrupts what runs, joins the thread. Idempotent. `why`: the error
  // queued ops fail with, each prefixed with its op (default: Error "... the group was shut down").
  void stop(std::exception_ptr why = nullptr) C10D_EXCLUDES(mu_);
  // True once stop() was called: a running op checks it between polls and fails.
  const std::atomic<bool>& aborting() const { return stop_; }

 private:
  struct Task {
    std::shared_ptr<BackendWork> work;
    Body body;
    bool large = false;  // more than inlineBytes_ (counted in largeAhead_)
  };
  // Calls the inline body at *body (an F), moved onto the calling (fiber) stack first.
  using Trampoline = std::exception_ptr (*)(void* body, Handoff* h);
  template <typename F>
  static std::exception_ptr callMoved(void* body, Handoff* h) {
    F local(std::move(*static_cast<F*>(body)));
    try {
      return local(h);
    } catch (...) {
      return std::current_exception();
    }
  }
  void runInline(const std::shared_ptr<BackendWork>& work, Clock::time_point now, Trampoline fn,
                 void* body) C10D_EXCLUDES(mu_);
  // direct_: runs the body on the caller's stack (it never hands off).
  template <typename F>
  void runDirect(const std::shared_ptr<BackendWork>& work, F& body) C10D_EXCLUDES(mu_);
  void failStopped(BackendWork& w);
  // The caller waits for the thread to finish the small ops ahead (see "Catching up"); true
  // once it owns the fast path (state_ == kInline).
  bool catchUp();
  void loop() C10D_EXCLUDES(mu_);
  // Finishes the inline task that the fiber just completed (on the caller's thread).
  void finishInline(BackendWork& w) C10D_EXCLUDES(mu_);

  const std::string group_;
  const size_t inlineBytes_;
  const int inlineUs_;
  const bool direct_;

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_ C10D_GUARDED_BY(mu_);
  // The fiber waits for the thread to resume it.
  bool handedOff_ C10D_GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};
  // The fast path's lock-free admission: bit 0 (kInline) = the caller runs an op inline (not
  // handed off); the rest counts ops the thread owns (queued, running, or handed off) in units of
  // kQueued. An op may start inline only by moving it from 0 to kInline: nothing ahead of it.
  static constexpr uint32_t kInline = 1, kQueued = 2;
  std::atomic<uint32_t> state_{0};
  // Catching up: ops the thread completed, queued ops larger than inlineBytes_, and whether a
  // caller may wait for the thread (false after a wait that saw no progress, until the thread
  // completes its next op).
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint32_t> largeAhead_{0};
  std::atomic<bool> catchUpOk_{true};

  // The inline op: touched by the caller while it runs inline, then by the thread after a
  // hand-off (ordered through mu_).
  Fiber fiber_;
  Handoff handoff_;
  Handoff directHandoff_;  // never inlined(): a direct op's Comm polls but never hands off
  // Set (a reference taken) when an inline op hands off; the caller's own reference serves
  // until then.
  std::shared_ptr<BackendWork> inlineWork_;
  Trampoline inlineFn_ = nullptr;
  void* inlineBody_ = nullptr;  // valid until the fiber's first instructions moved it
  std::exception_ptr inlineError_;

  std::thread thread_;
};

template <typename F>
void CollectiveEngine::submit(const std::shared_ptr<BackendWork>& work, size_t bytes,
                              Clock::time_point now, F&& body) {
  static_assert(!std::is_lvalue_reference<F>::value, "submit() takes the body by rvalue");
  using Fn = std::decay_t<F>;
  uint32_t idle = 0;
  if (bytes <= inlineBytes_ && inlineBytes_ > 0 && !stop_.load(std::memory_order_relaxed) &&
      (state_.compare_exchange_strong(idle, kInline, std::memory_order_acquire,
                                      std::memory_order_relaxed) ||
       catchUp())) {
    if (std::this_thread::get_id() != thread_.get_id()) {
      if (direct_) {
        runDirect(work, body);
        return;
      }
      // `body` (the caller's temporary) lives until submit() returns; the fiber moves it onto
      // its own stack before it can be suspended.
      runInline(work, now, &callMoved<Fn>, static_cast<void*>(std::addressof(body)));
      return;
    }
    state_.fetch_sub(kInline);  // a callback on the thread issues an op: it is queued
  }
  {
    MutexLock g(mu_);
    if (stop_.load()) {
      g.unlock();
      failStopped(*work);
      return;
    }
    const bool large = bytes > inlineBytes_;
    if (large) largeAhead_.fetch_add(1);
    queue_.push_back(Task{work, Body(std::move(body)), large});
    state_.fetch_add(kQueued);
  }
  cv_.notify_one();
}

template <typename F>
void CollectiveEngine::runDirect(const std::shared_ptr<BackendWork>& work, F& body) {
  try {
    inlineError_ = body(&directHandoff_);
  } catch (...) {
    inlineError_ = std::current_exception();
  }
  finishInline(*work);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
