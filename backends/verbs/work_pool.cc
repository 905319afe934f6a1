#include "backends/verbs/work_pool.h"

namespace c10d {
namespace verbs {

WorkPool::WorkPool() {
  SpinLockGuard g(mu_);
  addSlab();
}

void WorkPool::addSlab() {
  // Value-initialised: zeroing writes every page now, so no op faults on one later.
  slabs_.emplace_back(new Block[kSlabBlocks]());
  free_.reserve(slabs_.size() * kSlabBlocks);
  Block* s = slabs_.back().get();
  for (size_t i = kSlabBlocks; i-- > 0;) free_.push_back(&s[i]);
}

void* WorkPool::take() {
  SpinLockGuard g(mu_);
  if (free_.empty()) addSlab();
  void* p = free_.back();
  free_.pop_back();
  return p;
}

void WorkPool::give(void* p) {
  SpinLockGuard g(mu_);
  free_.push_back(p);
}

size_t WorkPool::blocksMade() const {
  SpinLockGuard g(mu_);
  return slabs_.size() * kSlabBlocks;
}

size_t WorkPool::blocksFree() const {
  SpinLockGuard g(mu_);
  return free_.size();
}

}  // namespace verbs
}  // namespace c10d
