// MrCache: a cache of registered memory regions (ibv_reg_mr is expensive: it pins pages and
// talks to the NIC), keyed by address range. A request [addr, addr+len) reuses any cached region
// covering it; a miss registers the page-aligned range and caches it; beyond `maxEntries` the
// least recently used unpinned region is deregistered. Registration itself is pluggable
// (register/deregister functions), so the bookkeeping is tested without a device.
//
// Pins: the NIC reads a region until the completion of every RDMA write from it is polled, so
// the transport pin()s the region of each write and unpin()s it at the completion. A pinned
// region is never evicted (the cache grows past `maxEntries` meanwhile and shrinks back as pins
// are released), and invalidate() only retires it: no longer handed out, deregistered at its last
// unpin().
//
// Not thread-safe: each transport owns one and uses it from one thread per channel under its own
// lock. Deregisters everything on destruction, pinned or not (errors are reported to stderr, never
// thrown).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

struct MrRegion {
  uintptr_t begin = 0;
  size_t len = 0;
  void* handle = nullptr;  // ibv_mr* for the real transport
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool covers(uintptr_t a, size_t n) const { return a >= begin && a + n <= begin + len; }
};

class MrCache {
 public:
  // `reg(addr, len)` registers and returns the region (throws on failure); `dereg` releases it.
  using RegisterFn = std::function<MrRegion(void* addr, size_t len)>;
  using DeregisterFn = std::function<void(const MrRegion&)>;

  MrCache(RegisterFn reg, DeregisterFn dereg, size_t maxEntries = 64, size_t pageBytes = 4096);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // The region covering [addr, addr+len) (registering it on a miss). The reference is valid
  // until the next call that may evict (get, pin, unpin, invalidate) unless the region is pinned.
  const MrRegion& get(const void* addr, size_t len);
  // get(), and the region pinned once more; the reference stays valid until the matching unpin().
  const MrRegion& pin(const void* addr, size_t len);
  // Releases one pin of `r` (a reference pin() returned).
  void unpin(const MrRegion& r);
  // Deregisters every cached region overlapping [addr, addr+len) (e.g. memory being freed);
  // pinned ones are retired instead, and deregistered at their last unpin().
  void invalidate(const void* addr, size_t len);

  size_t size() const { return regions_.size(); }  // cached (retired ones not counted)
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t evictions() const { return evictions_; }

 private:
  struct Entry {
    MrRegion region;
    int pins = 0;
  };
  std::list<Entry>::iterator lookup(const void* addr, size_t len);
  // Deregisters least recently used unpinned regions (never `keep`) while over maxEntries.
  void trim(const Entry* keep);
  void deregister(const MrRegion& r) noexcept;

  RegisterFn reg_;
  DeregisterFn dereg_;
  const size_t maxEntries_;
  const size_t pageBytes_;
  std::list<Entry> regions_;  // most recently used first
  std::list<Entry> retired_;  // invalidated while pinned
  size_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
