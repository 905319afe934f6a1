#include "c10d/backends/verbs/transport/ibverbs/mr_cache.h"

#include <cstdio>
#include <exception>
#include <iterator>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

MrCache::MrCache(RegisterFn reg, DeregisterFn dereg, size_t maxEntries, size_t pageBytes)
    : reg_(std::move(reg)),
      dereg_(std::move(dereg)),
      maxEntries_(maxEntries ? maxEntries : 1),
      pageBytes_(pageBytes ? pageBytes : 1) {}

MrCache::~MrCache() {
  for (const auto& e : regions_) deregister(e.region);
  for (const auto& e : retired_) deregister(e.region);
}

void MrCache::deregister(const MrRegion& r) noexcept {
  try {
    dereg_(r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d verbs: deregistering memory failed: %s\n", e.what());
  }
}

std::list<MrCache::Entry>::iterator MrCache::lookup(const void* addr, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (it->region.covers(a, len)) {
      ++hits_;
      if (it != regions_.begin()) regions_.splice(regions_.begin(), regions_, it);
      return regions_.begin();
    }
  }
  ++misses_;
  const uintptr_t begin = a / pageBytes_ * pageBytes_;
  const uintptr_t end = (a + len + pageBytes_ - 1) / pageBytes_ * pageBytes_;
  MrRegion r = reg_(reinterpret_cast<void*>(begin), end - begin);
  r.begin = begin;
  r.len = end - begin;
  regions_.push_front(Entry{r, 0});
  return regions_.begin();
}

void MrCache::trim(const Entry* keep) {
  auto it = regions_.end();
  while (regions_.size() > maxEntries_ && it != regions_.begin()) {
    --it;
    if (it->pins > 0 || &*it == keep) continue;
    dereg_(it->region);
    it = regions_.erase(it);
    ++evictions_;
  }
}

const MrRegion& MrCache::get(const void* addr, size_t len) {
  auto it = lookup(addr, len);
  trim(&*it);
  return it->region;
}

const MrRegion& MrCache::pin(const void* addr, size_t len) {
  auto it = lookup(addr, len);
  ++it->pins;
  trim(&*it);
  return it->region;
}

void MrCache::unpin(const MrRegion& r) {
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (&it->region != &r) continue;
    if (--it->pins == 0) trim(nullptr);
    return;
  }
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    if (&it->region != &r) continue;
    if (--it->pins == 0) {
      dereg_(it->region);
      retired_.erase(it);
    }
    return;
  }
}

void MrCache::invalidate(const void* addr, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  for (auto it = regions_.begin(); it != regions_.end();) {
    auto next = std::next(it);
    if (it->region.begin < a + len && a < it->region.begin + it->region.len) {
      if (it->pins > 0) {
        retired_.splice(retired_.end(), regions_, it);
      } else {
        dereg_(it->region);
        regions_.erase(it);
      }
    }
    it = next;
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
