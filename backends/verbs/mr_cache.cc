#include "backends/verbs/mr_cache.h"

#include <cstdio>
#include <exception>

namespace c10d {
namespace verbs {

MrCache::MrCache(RegisterFn reg, DeregisterFn dereg, size_t maxEntries, size_t pageBytes)
    : reg_(std::move(reg)),
      dereg_(std::move(dereg)),
      maxEntries_(maxEntries ? maxEntries : 1),
      pageBytes_(pageBytes ? pageBytes : 1) {}

MrCache::~MrCache() {
  for (const auto& r : regions_) {
    try {
      dereg_(r);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "c10d verbs: deregistering memory failed: %s\n", e.what());
    }
  }
}

const MrRegion& MrCache::get(const void* addr, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (it->covers(a, len)) {
      ++hits_;
      if (it != regions_.begin()) regions_.splice(regions_.begin(), regions_, it);
      return regions_.front();
    }
  }
  ++misses_;
  const uintptr_t begin = a / pageBytes_ * pageBytes_;
  const uintptr_t end = (a + len + pageBytes_ - 1) / pageBytes_ * pageBytes_;
  MrRegion r = reg_(reinterpret_cast<void*>(begin), end - begin);
  r.begin = begin;
  r.len = end - begin;
  regions_.push_front(r);
  while (regions_.size() > maxEntries_) {
    dereg_(regions_.back());
    regions_.pop_back();
    ++evictions_;
  }
  return regions_.front();
}

void MrCache::invalidate(const void* addr, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->begin < a + len && a < it->begin + it->len) {
      dereg_(*it);
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace verbs
}  // namespace c10d
