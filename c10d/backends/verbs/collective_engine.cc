#include "c10d/backends/verbs/collective_engine.h"

#include <pthread.h>

#include <algorithm>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void Handoff::handOff() {
  Fiber* f = fiber_;
  if (f == nullptr) return;
  fiber_ = nullptr;
  f->suspend();
}

namespace {
std::exception_ptr shutDownError(const Work& w);

// While the engine thread runs an op's completion callbacks: the engine, and a flag on that
// thread's stack our destructor sets, since a callback may destroy the group (and with it the
// engine) on that thread. Thread-locals, so a destroyer on another thread reads nothing the
// engine thread writes.
thread_local const CollectiveEngine* tlsFinishing = nullptr;
thread_local bool* tlsDestroyed = nullptr;
}  // namespace

CollectiveEngine::CollectiveEngine(std::string group, size_t inlineBytes, int inlineUs, bool direct,
                                   int sliceUs)
    : group_(std::move(group)),
      inlineBytes_(inlineBytes),
      inlineUs_(inlineUs),
      direct_(direct || inlineUs < 0) {
  thread_ = std::thread([this, sliceUs] {
    pthread_setname_np(pthread_self(), "c10d-verbs-coll");
    requestShortSlice(sliceUs);
    loop();
  });
}

CollectiveEngine::~CollectiveEngine() {
  // Only from a callback (its own thread); a destroyer elsewhere joins the thread below.
  if (tlsFinishing == this) *tlsDestroyed = true;
  stop();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();  // destroyed from one of its own callbacks
    else
      thread_.join();
  }
}

void CollectiveEngine::stop(std::exception_ptr why) {
  {
    MutexLock g(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  // Once joined (or when called from the thread itself, which leaves after this op), nothing pops
  // the queue any more: what is still there never ran.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  std::deque<Task> left;
  {
    MutexLock g(mu_);
    left.swap(queue_);
  }
  for (auto& t : left) {
    t.work->finish(why ? detail::prefixed(why, t.work->describe() + ": ") : shutDownError(*t.work));
  }
}

namespace {

std::exception_ptr shutDownError(const Work& w) {
  return std::make_exception_ptr(Error(w.describe() + ": the group was shut down"));
}

// Runs a body; an exception escaping it (it should return its error) is its error.
std::exception_ptr runBody(const CollectiveEngine::Body& body, Handoff* h) {
  try {
    return body(h);
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

void CollectiveEngine::failStopped(BackendWork& w) {
  w.finish(shutDownError(w));
}

bool CollectiveEngine::catchUp() {
  // Not from the thread itself (a callback issuing an op): it would wait for its own op.
  if (!catchUpOk_.load(std::memory_order_relaxed) || std::this_thread::get_id() == thread_.get_id())
    return false;
  const auto budget = std::chrono::microseconds(std::max(inlineUs_, 0));
  uint64_t seen = completed_.load(std::memory_order_relaxed);
  auto lastProgress = Clock::now();
  for (int i = 1;; ++i) {
    if (largeAhead_.load(std::memory_order_relaxed) != 0 || stop_.load(std::memory_order_relaxed))
      return false;
    uint32_t idle = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_strong(idle, kInline, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return true;
    // Yield: on a busy host the thread we wait for may need this CPU (often the engine thread
    // itself, finishing the op before ours: waiting on for it is the point, within the budget).
    relax();
    if ((i & 7) != 0) continue;
    const auto now = Clock::now();
    const uint64_t c = completed_.load(std::memory_order_relaxed);
    if (c != seen) {
      seen = c;
      lastProgress = now;
    } else if (now - lastProgress > budget) {
      catchUpOk_.store(false, std::memory_order_relaxed);  // stalled: queue until it moves
      return false;
    }
  }
}

void CollectiveEngine::runInline(const std::shared_ptr<BackendWork>& work, Clock::time_point now,
                                 Trampoline fn, void* body) {
  inlineError_ = nullptr;
  inlineFn_ = fn;
  inlineBody_ = body;
  handoff_.fiber_ = &fiber_;
  handoff_.until_ = now + std::chrono::microseconds(inlineUs_);
  bool done = fiber_.start(
      [](void* self) {
        auto* e = static_cast<CollectiveEngine*>(self);
        e->inlineError_ = e->inlineFn_(e->inlineBody_, &e->handoff_);
      },
      this);
  if (!done) {
    // Its flight record shows it started before the engine thread (or a dump) can see it.
    work->publishStartUnshared();
    MutexLock g(mu_);
    if (!stop_.load()) {
      inlineWork_ = work;  // the thread's reference: the caller may drop its own
      handedOff_ = true;
      state_.fetch_add(kQueued - kInline);  // the thread owns it now
      g.unlock();
      cv_.notify_one();
      return;
    }
    g.unlock();
    // The engine is stopping and may be gone: finish the op here (it fails at its next poll).
    while (!fiber_.resume()) {
    }
  }
  finishInline(*work);
}

void CollectiveEngine::finishInline(BackendWork& w) {
  std::exception_ptr e = std::move(inlineError_);
  inlineError_ = nullptr;
  // Finish before clearing kInline: an op issued after this one must not complete before it.
  // Completed inline without a handoff: the caller has not got the Work yet and no other thread
  // ever had it, so it completes without its lock and wake-up, and runs no callbacks (none can
  // destroy us here).
  w.finishUnshared(e);
  // Ops queued meanwhile (by other threads, or by a completion callback) waited for this one:
  // the thread runs them. The lock orders the notify after its predicate check.
  if (state_.fetch_sub(kInline) != kInline) {
    { MutexLock g(mu_); }
    cv_.notify_one();
  }
}

void CollectiveEngine::loop() {
  for (;;) {
    Task t;
    bool resume = false;
    {
      MutexLock g(mu_);
      // While the caller runs an op inline, queued ops wait for it (they complete after it).
      g.wait(cv_, [&]() C10D_REQUIRES(mu_) {
        return handedOff_ || stop_.load() || ((state_.load() & kInline) == 0 && !queue_.empty());
      });
      if (handedOff_) {
        handedOff_ = false;
        resume = true;
      } else if (stop_.load()) {
        return;  // stop() fails what is still queued
      } else {
        t = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    std::exception_ptr e;
    if (resume) {
      // The rest of an op a caller started inline (it fails promptly if we are stopping).
      while (!fiber_.resume()) {
      }
      t.work = std::move(inlineWork_);
      e = std::move(inlineError_);
      inlineError_ = nullptr;
    } else {
      e = runBody(t.body, nullptr);  // fails at its first poll if stop() came meanwhile
    }
    bool destroyed = false;
    tlsFinishing = this;
    tlsDestroyed = &destroyed;
    t.work->finish(e);
    tlsFinishing = nullptr;
    tlsDestroyed = nullptr;
    if (destroyed) return;  // a completion callback destroyed the group (and us); detached
    if (t.large) largeAhead_.fetch_sub(1);
    t = Task{};
    completed_.fetch_add(1, std::memory_order_relaxed);
    // Progress again: the next small op may wait for the thread again (one stalled wait per op
    // the thread completes, at most).
    if (!catchUpOk_.load(std::memory_order_relaxed))
      catchUpOk_.store(true, std::memory_order_relaxed);
    state_.fetch_sub(kQueued);  // after finish(): an op issued next may not overtake this one
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
