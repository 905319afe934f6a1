// steady_clock's time in nanoseconds, read from the CPU's time-stamp counter where it is invariant.
//
// Why: every op reads the clock twice (its flight record's issue and end), and through a VM's
// kvm-clock a steady_clock read costs ~30 ns, about a tenth of the smallest op's whole software
// path; rdtsc costs ~11 ns. Where the counter is not invariant (CPUID 0x80000007 EDX bit 8), or
// not x86-64, fastNowNs() is steady_clock.
//
// How: the counter is scaled by ns-per-tick measured against steady_clock from the first read on
// (over a baseline that grows with the process's age, so NTP's slewing of the monotonic clock is
// averaged), and re-anchored on steady_clock every 10 ms: a value strays from steady_clock by at
// most the scale's error over that interval (2 us at first, ns after a second; NTP's 500 ppm
// slewing bound gives 5 us). Anchors are pairs of reads taken within ~1 us of each other (not
// split by an interrupt or a preemption). Until the baseline is 10 ms long, and on any read that
// finds the anchor being updated, it is steady_clock itself. Thread-safe, lock-free (a sequence
// lock over atomic words). Values from different threads are as comparable as steady_clock's, to
// within that error: use it for timestamps and deadlines at op granularity, not for ordering events
// between threads.
#pragma once

#include <cstdint>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

int64_t fastNowNs();

// steady_clock now, in ns (what fastNowNs() follows).
int64_t steadyNowNs();

C10D_NAMESPACE_END
}  // namespace c10d
