// Lock annotations checked by clang's -Wthread-safety (the build turns it on with clang; CI builds
// once with clang and -Werror, .ci/run), and the annotated mutex types they need: libstdc++'s
// std::mutex carries no annotations, so guarded state uses c10d::Mutex (a std::mutex) or
// c10d::SpinLock, locked through MutexLock / SpinLockGuard (or std::lock_guard on a SpinLock).
//
//   Mutex mu_;
//   int n_ C10D_GUARDED_BY(mu_);
//   void bump() C10D_EXCLUDES(mu_) { MutexLock l(mu_); ++n_; }
//   void bumpLocked() C10D_REQUIRES(mu_) { ++n_; }
//
// Condition variables: MutexLock::wait / waitUntil / waitFor take a std::condition_variable and a
// predicate that runs with the lock held; write the predicate as
// `[&]() C10D_REQUIRES(mu_) { return done_; }` so the analysis knows it. Other compilers see
// nothing but the types. Modeled on abseil's thread_annotations.h and Mutex (reference, not
// copied).
//
// Threads: that is its purpose.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include "c10d/base/abi.h"

#if defined(__clang__)
#define C10D_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define C10D_THREAD_ANNOTATION(x)
#endif

#define C10D_CAPABILITY(x) C10D_THREAD_ANNOTATION(capability(x))
#define C10D_SCOPED_CAPABILITY C10D_THREAD_ANNOTATION(scoped_lockable)
#define C10D_GUARDED_BY(x) C10D_THREAD_ANNOTATION(guarded_by(x))
#define C10D_PT_GUARDED_BY(x) C10D_THREAD_ANNOTATION(pt_guarded_by(x))
#define C10D_REQUIRES(...) C10D_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define C10D_ACQUIRE(...) C10D_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define C10D_RELEASE(...) C10D_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define C10D_TRY_ACQUIRE(...) C10D_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define C10D_EXCLUDES(...) C10D_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define C10D_RETURN_CAPABILITY(x) C10D_THREAD_ANNOTATION(lock_returned(x))
#define C10D_ASSERT_CAPABILITY(x) C10D_THREAD_ANNOTATION(assert_capability(x))
// For the few functions whose locking the analysis cannot follow (say why next to each use).
#define C10D_NO_THREAD_SAFETY_ANALYSIS C10D_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace c10d {
C10D_NAMESPACE_BEGIN

// std::mutex with the annotations. BasicLockable, so std::lock_guard / std::unique_lock work too
// (but the analysis follows only MutexLock).
class C10D_CAPABILITY("mutex") Mutex {
 public:
  void lock() C10D_ACQUIRE() { mu_.lock(); }
  void unlock() C10D_RELEASE() { mu_.unlock(); }
  bool try_lock() C10D_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds it (a path it cannot see, e.g. a callback run under it).
  void assertHeld() const C10D_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; can be released and taken again, and waits on condition
// variables (the lock is released while waiting and held again on return).
class C10D_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) C10D_ACQUIRE(mu) : lk_(mu.mu_) {}
  ~MutexLock() C10D_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() C10D_ACQUIRE() { lk_.lock(); }
  void unlock() C10D_RELEASE() { lk_.unlock(); }

  void wait(std::condition_variable& cv) { cv.wait(lk_); }
  template <typename Pred>
  void wait(std::condition_variable& cv, Pred pred) {
    cv.wait(lk_, pred);
  }
  template <typename Clock, typename Duration, typename Pred>
  bool waitUntil(std::condition_variable& cv, const std::chrono::time_point<Clock, Duration>& t,
                 Pred pred) {
    return cv.wait_until(lk_, t, pred);
  }
  template <typename Clock, typename Duration>
  std::cv_status waitUntil(std::condition_variable& cv,
                           const std::chrono::time_point<Clock, Duration>& t) {
    return cv.wait_until(lk_, t);
  }
  template <typename Rep, typename Period, typename Pred>
  bool waitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d,
               Pred pred) {
    return cv.wait_for(lk_, d, pred);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

C10D_NAMESPACE_END
}  // namespace c10d
