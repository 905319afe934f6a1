#include "c10d/base/fast_clock.h"

#include <atomic>
#include <chrono>
#include "c10d/base/abi.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace c10d {
C10D_NAMESPACE_BEGIN

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__x86_64__)

namespace {

constexpr int64_t kReanchorNs = 10'000'000;  // 10 ms
// The scale needs this baseline before it is used: its ends are known to ~1 us (below), so its
// error is at most ~2e-4 at first (2 us over an anchor interval), ~1e-6 after a second.
constexpr int64_t kMinBaselineNs = 10'000'000;
// At most this many ticks around an anchor's steady_clock read (~1-2 us; the read itself takes
// ~30 ns through kvm-clock, 60-150 ticks): a pair split by an interrupt or a preemption is not an
// anchor (milliseconds between the two would offset every value until the next anchor).
constexpr uint64_t kMaxPairTicks = 4'000;

bool invariantTsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // 0: the leaf is beyond the CPU's highest extended leaf.
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 8)) != 0;
}

// The calibration, under a sequence lock (odd while a thread re-anchors it).
struct Calibration {
  std::atomic<uint64_t> seq{0};
  // The anchor: ns = anchorNs + ((tsc - anchorTsc) * mult >> 32) for tsc - anchorTsc < limit.
  std::atomic<uint64_t> anchorTsc{0};
  std::atomic<int64_t> anchorNs{0};
  std::atomic<uint64_t> mult{0};  // ns per tick, 32.32 fixed point; 0 = not calibrated yet
  std::atomic<uint64_t> limit{0};
  // The baseline's start: the first read.
  std::atomic<uint64_t> firstTsc{0};
  std::atomic<int64_t> firstNs{0};
};

Calibration& calibration() {
  static Calibration c;
  return c;
}

const bool kUseTsc = invariantTsc();

// steady_clock now; and, when no other thread is at it, a new anchor and scale from this read.
int64_t reanchor(Calibration& c) {
  // The counter on both sides of the read: an anchor is a pair read together.
  const uint64_t before = __rdtsc();
  const int64_t ns = steadyNowNs();
  const uint64_t after = __rdtsc();
  if (after - before > kMaxPairTicks) return ns;
  const uint64_t tsc = before + (after - before) / 2;
  uint64_t s = c.seq.load(std::memory_order_relaxed);
  if ((s & 1) != 0 || !c.seq.compare_exchange_strong(s, s + 1, std::memory_order_acquire))
    return ns;
  std::atomic_thread_fence(std::memory_order_release);  // the odd count before the new values
  const uint64_t firstTsc = c.firstTsc.load(std::memory_order_relaxed);
  const int64_t firstNs = c.firstNs.load(std::memory_order_relaxed);
  if (firstNs == 0) {
    c.firstTsc.store(tsc, std::memory_order_relaxed);
    c.firstNs.store(ns, std::memory_order_relaxed);
  } else if (ns - firstNs >= kMinBaselineNs && tsc > firstTsc) {
    const uint64_t ticks = tsc - firstTsc;
    const uint64_t span = static_cast<uint64_t>(ns - firstNs);
    const uint64_t mult =
        static_cast<uint64_t>((static_cast<unsigned __int128>(span) << 32) / ticks);
    if (mult > 0) {
      c.anchorTsc.store(tsc, std::memory_order_relaxed);
      c.anchorNs.store(ns, std::memory_order_relaxed);
      c.mult.store(mult, std::memory_order_relaxed);
      // kReanchorNs in ticks; also bounds (tsc - anchor) * mult below 2^64.
      c.limit.store(
          static_cast<uint64_t>((static_cast<unsigned __int128>(kReanchorNs) << 32) / mult),
          std::memory_order_relaxed);
    }
  }
  c.seq.store(s + 2, std::memory_order_release);
  return ns;
}

}  // namespace

int64_t fastNowNs() {
  if (!kUseTsc) return steadyNowNs();
  Calibration& c = calibration();
  const uint64_t tsc = __rdtsc();
  const uint64_t s = c.seq.load(std::memory_order_acquire);
  if ((s & 1) == 0) {
    const uint64_t anchorTsc = c.anchorTsc.load(std::memory_order_relaxed);
    const int64_t anchorNs = c.anchorNs.load(std::memory_order_relaxed);
    const uint64_t mult = c.mult.load(std::memory_order_relaxed);
    const uint64_t limit = c.limit.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    // Unsigned: a counter behind the anchor (another CPU's, a hair behind) wraps past the limit.
    const uint64_t ticks = tsc - anchorTsc;
    if (c.seq.load(std::memory_order_relaxed) == s && mult != 0 && ticks < limit)
      return anchorNs + static_cast<int64_t>((ticks * mult) >> 32);
  }
  return reanchor(c);
}

#else

int64_t fastNowNs() {
  return steadyNowNs();
}

#endif

C10D_NAMESPACE_END
}  // namespace c10d
