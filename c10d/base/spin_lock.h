// SpinLock: a mutex for critical sections of a few stores that are almost never contended (the
// flight recorder's per-op updates), satisfying BasicLockable so std::lock_guard works with it.
// It is a capability for clang's -Wthread-safety (thread_annotations.h); lock it through
// SpinLockGuard, which the analysis follows (it does not follow std::lock_guard).
//
// Why not std::mutex: an uncontended pthread lock + unlock is two locked instructions and ~60
// instructions of library code; this is one exchange to lock and a plain release store to
// unlock. Under contention a waiter spins with a pause instruction, then yields the CPU, so a
// holder that was preempted (a long snapshot() on a loaded machine) still gets to run.
//
// Not for sections that block, allocate in the common case, or run long: use c10d::Mutex there.
//
// Threads: that is its purpose.
#pragma once

#include <atomic>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class C10D_CAPABILITY("mutex") SpinLock {
 public:
  void lock() C10D_ACQUIRE() {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
      // Wait until it looks free before trying again (a read does not steal the cache line).
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() C10D_TRY_ACQUIRE(true) {
    return !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() C10D_RELEASE() {
    flag_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> flag_{false};
};

// Holds a SpinLock for its scope (std::lock_guard<SpinLock> that the analysis follows).
class C10D_SCOPED_CAPABILITY SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& mu) C10D_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~SpinLockGuard() C10D_RELEASE() { mu_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& mu_;
};

C10D_NAMESPACE_END
}  // namespace c10d
