// WorkPool: recycled, pre-touched memory for one group's Works.
//
// Every op allocates one Work (about 400 bytes with its shared_ptr control block; nothing else on
// the issue path allocates). On a VM the first write to a fresh heap page is a page fault that
// costs 10-70 us (this project's Firecracker VMs: median 11 us, p99 48-70; bare metal ~1 us), so
// the first time a program keeps more ops in flight than ever before, those ops stall on faults:
// at n=2 the first round of 20 in-flight 4 KiB allreduces took 7 us per op, later rounds 1.8
// (perf/README.md). The pool hands out fixed-size blocks from slabs it touched when it made them
// (kSlabBlocks at a time, the first slab with the group) and keeps every block it made: the
// in-flight high-water mark costs page faults once per slab of 64 ops, where the slab is made,
// instead of on the ops' path. A Work may outlive its group: each one's allocator (stored in its
// control block) holds the pool.
//
// Threads: any. A block returns from whichever thread drops the Work's last reference; the free
// list is under a SpinLock (a few stores).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "c10d/spin_lock.h"
#include "c10d/work.h"

namespace c10d {
namespace verbs {

class WorkPool {
 public:
  static constexpr size_t kBlockBytes = 512;
  static constexpr size_t kSlabBlocks = 64;

  WorkPool();  // makes (and touches) the first slab
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // A Work (constructed with `args`) whose memory, control block included, comes from `pool`.
  template <typename... Args>
  static std::shared_ptr<Work> make(const std::shared_ptr<WorkPool>& pool, Args&&... args) {
    return std::allocate_shared<Work>(Allocator<Work>(pool), std::forward<Args>(args)...);
  }

  // For tests: blocks made so far, and how many of them are free.
  size_t blocksMade() const C10D_EXCLUDES(mu_);
  size_t blocksFree() const C10D_EXCLUDES(mu_);

  // The allocator allocate_shared uses (rebound to its control block): one block when the
  // request fits, the global heap otherwise.
  template <typename T>
  class Allocator {
   public:
    using value_type = T;
    explicit Allocator(std::shared_ptr<WorkPool> pool) : pool_(std::move(pool)) {}
    template <typename U>
    Allocator(const Allocator<U>& o) : pool_(o.pool_) {}  // NOLINT: rebinding converts implicitly
    T* allocate(size_t n) {
      if (fits(n)) return static_cast<T*>(pool_->take());
      return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    }
    void deallocate(T* p, size_t n) {
      if (fits(n)) {
        pool_->give(p);
        return;
      }
      ::operator delete(p, std::align_val_t(alignof(T)));
    }
    template <typename U>
    bool operator==(const Allocator<U>& o) const {
      return pool_ == o.pool_;
    }
    template <typename U>
    bool operator!=(const Allocator<U>& o) const {
      return pool_ != o.pool_;
    }

   private:
    template <typename U>
    friend class Allocator;
    static bool fits(size_t n) { return n * sizeof(T) <= kBlockBytes && alignof(T) <= kAlign; }
    std::shared_ptr<WorkPool> pool_;
  };

 private:
  static constexpr size_t kAlign = 64;
  struct alignas(kAlign) Block {
    unsigned char bytes[kBlockBytes];
  };
  void* take() C10D_EXCLUDES(mu_);
  void give(void* p) C10D_EXCLUDES(mu_);
  void addSlab() C10D_REQUIRES(mu_);

  mutable SpinLock mu_;
  std::vector<void*> free_
      C10D_GUARDED_BY(mu_);  // capacity: every block made (give never allocates)
  std::vector<std::unique_ptr<Block[]>> slabs_ C10D_GUARDED_BY(mu_);
};

}  // namespace verbs
}  // namespace c10d
