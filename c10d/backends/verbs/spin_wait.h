// Spin-then-sleep waiting on a 32-bit word in (possibly shared) memory.
//
// First, when the ranks have a CPU each (C10D_BUSY_US, auto: 20 us, else 0), a waiter polls with
// only a pause instruction: a sched_yield syscall can cost more than a whole small collective.
//
// Then it spins with sched_yield() (C10D_SPIN_US; auto: 20 ms where the host's ranks fit its
// CPUs, else 60 us) and sleeps on a futex in 10 ms slices, checking the deadline and the liveness
// of its peers between slices. Pure spinning starves a peer that needs the same core; sleeping at
// once pays a futex wake-up per step. The long auto spin keeps ranks runnable, so the scheduler
// keeps them on CPUs of their own (a rank that sleeps between steps gets placed beside its waker).
//
// The spin ends early when the application computes beside it (relax()): a sched_yield() gave
// the CPU away while another thread of this process was runnable (backward running beside a
// bucket's allreduce). Yielding to that compute, the waiter comes back only when the scheduler
// next picks it, a slice or more later, at every step of a collective; sleeping instead, it is
// woken by the peer that releases it. The engine threads ask for a short scheduler slice
// (requestShortSlice), so that this wake-up preempts the compute at once. Another process's load
// does not end the spin: there, staying runnable is what keeps the ranks on CPUs of their own.
// But a yield to another process gives it a whole slice (milliseconds, at every wait: an 8 B
// allreduce beside two busy loops at nice 0 took 1.7 ms): where the ranks have a CPU each, once a
// yield went to another process the waiter polls with pauses instead of yielding for the next
// kForeignLoadPoll, as Open MPI does (0.7 us there). A thread of its own process that becomes
// runnable sends it back to yielding (and to sleep if that thread shares its CPU). A yield to a
// thread of a peer rank on this host (its compute, while it is behind) is not another process's
// load: the waiter keeps yielding to it (polling would take half the CPU it needs to catch up).
//
// Wakers call wake() after changing the word; it issues the futex syscall only when a sleeper has
// announced itself in `sleepers` (seq_cst on both sides, so no wake-up is lost).
//
// Threads: none. Blocks at most until the deadline; then throws TimeoutError from `onTimeout`.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

using Clock = std::chrono::steady_clock;

// A word processes wait on, with the count of sleepers beside it (both in shared memory). Eight
// bytes, so that what a waiter reads once woken may share its cache line (ShmTransport's
// arrivals); PaddedWaitWord has a line of its own.
struct WaitWord {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> sleepers{0};
};
struct alignas(64) PaddedWaitWord : WaitWord {};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free");

// Wakes every sleeper on `w` if any announced itself. Call after changing w.value.
void wake(WaitWord& w);

// What a waiter does between sleep slices: throw CommError for a dead peer, TimeoutError past the
// deadline. Returns normally to keep waiting.
using CheckFn = std::function<void()>;

// Waits until `ready()` holds. `w` is the word whose change signals that ready() may now hold;
// `seen` is w.value as read *before* the caller last evaluated ready() (so a change after that is
// never missed). `busyUs` bounds the pure polling phase, `spinUs` the sched_yield phase (with
// relax(pollOnForeignLoad, jobPids)); `check` runs before each sleep slice, and also at `spinUntil`
// if that comes first (an inline op's hand-off budget: it hands off there and the engine thread
// spins out the phase).
template <typename Ready>
void waitUntil(WaitWord& w, uint32_t seen, Ready&& ready, int busyUs, int spinUs,
               bool pollOnForeignLoad, const std::vector<int>* jobPids, const CheckFn& check,
               Clock::time_point spinUntil = Clock::time_point::max());

// Polls ready() with only a pause between tries for at most about `busyUs` (from its first clock
// read, see below); true once it holds.
template <typename Ready>
bool busyPoll(Ready&& ready, int busyUs);

// The polling budget, adapted to how long waits take (additive increase, multiplicative
// decrease): a wait that ends within the full budget adds 1 us back (up to the maximum); a longer
// one halves it, so on a loaded or oversubscribed host a waiter soon stops burning CPU its peers
// need, and on an idle one it polls fully after a few dozen quick waits. Per waiter (not shared
// between processes); not thread-safe.
class BusyBudget {
 public:
  explicit BusyBudget(int maxUs) : max_(maxUs), cur_(maxUs) {}
  int current() const { return cur_; }
  int max() const { return max_; }
  // busyPoll(ready, current()); a wait that ends there is recorded without a clock read (it ended
  // within the budget by construction). False: the budget ran out, and the wait began about
  // current() ago (pollStart()); record() it when it ends.
  template <typename Ready>
  bool poll(Ready&& ready) {
    if (!busyPoll(ready, cur_)) return false;
    grow();
    return true;
  }
  Clock::time_point pollStart() const { return Clock::now() - std::chrono::microseconds(cur_); }
  void record(std::chrono::nanoseconds waited) {
    if (waited <= std::chrono::microseconds(max_))
      grow();
    else
      cur_ /= 2;
  }

 private:
  void grow() { cur_ = cur_ < max_ ? cur_ + 1 : max_; }
  int max_, cur_;
};

// The ranks sharing this host's CPUs: `groupRanksHere` (the group's ranks on this host), or the
// launcher's LOCAL_WORLD_SIZE (torchrun, c10drun, mpirun, srun) where that is larger (a sub-group
// of 2 on a host of 8 ranks competes with all 8).
int ranksOnThisHost(int groupRanksHere);
// Whether `hostRanks` ranks fit the CPUs this process may run on (sched_getaffinity).
bool ranksFitCpus(int hostRanks);
// The kernel's boot id: the same in every process of one machine, whatever its hostname or
// network namespace (containers, the virtual hosts of the multi-host tests); "" if unreadable.
std::string bootId();
// This process's CPUs as the group's other ranks can compare them: "<boot id> <affinity mask>"
// (the mask as hex 64-bit words, CPUs 0-63 first, comma-separated).
std::string cpuShareKey();
// How many ranks, `keys` being every rank's cpuShareKey(), share CPUs with rank `me` (itself
// included): the same boot id and an affinity mask that overlaps its own. The ranks of other
// "hosts" on this machine count: they compete for the same CPUs as the host's own ranks. A
// malformed key (another version) counts as not sharing.
int ranksSharingCpus(const std::vector<std::string>& keys, int me);
// C10D_BUSY_US resolved: `configured` if >= 0, else 20 when `hostRanks` fit the CPUs, else 0.
int resolveBusyUs(int configured, int hostRanks);
// C10D_SPIN_US resolved: `configured` if >= 0, else 20000 when `hostRanks` fit the CPUs (a rank
// that never sleeps between steps stays runnable, so the scheduler keeps ranks on CPUs of their
// own even beside another busy process), else 60 (ranks share CPUs: give them up soon).
int resolveSpinUs(int configured, int hostRanks);
// C10D_SHM_CHUNK resolved: `configured` if non-zero, else 256 KiB when `hostRanks` fit the CPUs
// (a step's slots stay within a core's L2), else 512 KiB (ranks that share CPUs pay a context
// switch per step's barrier: fewer, larger steps).
size_t resolveShmChunkBytes(size_t configured, int hostRanks);

// Non-template core: sleeps on w while w.value == seen, at most `sliceMs`.
void sleepOn(WaitWord& w, uint32_t seen, int sliceMs);
// sched_yield, with a pause instruction first. True when the waiter should stop spinning and
// sleep: the yield gave the CPU away (it took longer than kYieldedAway; with nothing else to run
// it returns in about a microsecond) and another thread of this process is runnable
// (otherThreadRunnable), so the application computes beside the wait.
// pollOnForeignLoad (for waiters whose ranks have a CPU each: C10D_BUSY_US > 0): a yield that gave
// the CPU away with no thread of ours runnable went to another process, unless a thread of a
// process in `jobPids` (the group's ranks on this host) is runnable on this CPU
// (jobThreadRunnableHere); the calling thread's relax(true) calls of the next kForeignLoadPoll
// then pause instead of yielding, until a thread of ours is runnable (then they yield again, as
// above). relax(false) always yields.
bool relax(bool pollOnForeignLoad = false, const std::vector<int>* jobPids = nullptr);
constexpr std::chrono::microseconds kYieldedAway{50};
constexpr std::chrono::milliseconds kForeignLoadPoll{100};
// Whether the calling thread's relax(true) polls instead of yielding now (see relax).
bool pollingThroughForeignLoad();

// Whether a thread of this process other than the caller is running or runnable (state R in
// /proc/self/task/*/stat). A scan costs microseconds per thread, so its answer is reused (by
// every thread of the process) for kRunnableScanEvery, or 50x the scan's time when longer.
bool otherThreadRunnable();
constexpr std::chrono::milliseconds kRunnableScanEvery{5};
// Whether a thread of one of the processes `pids` (this process left out) is running or runnable
// and last ran on the caller's CPU. The calling thread reuses its answer as otherThreadRunnable
// does, while it stays on that CPU.
bool jobThreadRunnableHere(const std::vector<int>& pids);

// Asks the scheduler for a `us`-microsecond slice for the calling thread (sched_setattr's
// sched_runtime for SCHED_OTHER, honoured by EEVDF from Linux 6.12; older kernels ignore it):
// a thread with a shorter slice than the one running preempts it when woken. For the engine
// threads, which sleep and wake once per step of a collective while the application computes on
// the same CPUs. Only for a SCHED_OTHER thread (an application that chose a policy keeps it),
// keeping its nice value; us <= 0 leaves the default. Returns whether the kernel took it.
bool requestShortSlice(int us);

inline void cpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

template <typename Ready>
bool busyPoll(Ready&& ready, int busyUs) {
  if (ready()) return true;
  if (busyUs <= 0) return false;
  // The clock (a read is a sizeable share of a wait that ends quickly) is first read after
  // kUnclocked polls (well under a microsecond: a pause is at most ~140 cycles), so a peer that
  // arrives soon costs no clock read; the budget is then counted from that read. Budgets so short
  // that the overshoot would matter read it at once.
  constexpr int kUnclocked = 16;
  int first = 1;
  if (busyUs >= 4) {
    for (; first <= kUnclocked; ++first) {
      cpuPause();
      if (ready()) return true;
    }
  }
  const auto end = Clock::now() + std::chrono::microseconds(busyUs);
  for (int i = first;; ++i) {
    cpuPause();
    if (ready()) return true;
    if ((i & 63) == 0 && Clock::now() >= end) return false;
  }
}

template <typename Ready>
void waitUntil(WaitWord& w, uint32_t seen, Ready&& ready, int busyUs, int spinUs,
               bool pollOnForeignLoad, const std::vector<int>* jobPids, const CheckFn& check,
               Clock::time_point spinUntil) {
  if (busyPoll(ready, busyUs)) return;
  const auto spinFull = Clock::now() + std::chrono::microseconds(spinUs);
  auto spinEnd = std::min(spinFull, spinUntil);
  for (int i = 0;; ++i) {
    const bool yieldedAway = relax(pollOnForeignLoad, jobPids);
    if (ready()) return;
    if (yieldedAway) break;  // the CPU has other work: sleep, to be woken (check() runs first)
    if ((i & 7) != 7 || Clock::now() < spinEnd) continue;
    if (spinEnd == spinFull) break;
    check();  // spinUntil: an inline op hands off here, then spins on on the engine thread
    spinEnd = spinFull;
  }
  for (;;) {
    uint32_t cur = w.value.load(std::memory_order_seq_cst);
    if (ready()) return;
    check();  // before every sleep (an inline op hands itself to the engine thread here)
    if (cur == seen) sleepOn(w, seen, 10);
    seen = w.value.load(std::memory_order_seq_cst);
    if (ready()) return;
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
