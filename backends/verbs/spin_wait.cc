#include "backends/verbs/spin_wait.h"

#include <algorithm>

#include "base/launch_env.h"

#include <climits>
#include <ctime>

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace c10d {
namespace verbs {

namespace {
long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  // Shared (not FUTEX_PRIVATE): the word lives in memory mapped by several processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

void wake(WaitWord& w) {
  if (w.sleepers.load(std::memory_order_seq_cst) != 0)
    futex(&w.value, FUTEX_WAKE, INT_MAX, nullptr);
}

void sleepOn(WaitWord& w, uint32_t seen, int sliceMs) {
  w.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (w.value.load(std::memory_order_seq_cst) == seen) {
    timespec ts{sliceMs / 1000, (sliceMs % 1000) * 1000000L};
    futex(&w.value, FUTEX_WAIT, seen, &ts);  // EAGAIN / ETIMEDOUT / EINTR: the caller re-checks
  }
  w.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void relax() {
  cpuPause();
  sched_yield();
}

int ranksOnThisHost(int groupRanksHere) {
  try {
    return std::max(groupRanksHere, detectLaunchEnv().localWorldSize);
  } catch (const std::exception&) {
    return groupRanksHere;  // a malformed launcher variable: init reports it where it matters
  }
}

bool ranksFitCpus(int hostRanks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return hostRanks <= cpus;
}

int resolveBusyUs(int configured, int hostRanks) {
  if (configured >= 0) return configured;
  return ranksFitCpus(hostRanks) ? 20 : 0;
}

int resolveSpinUs(int configured, int hostRanks) {
  if (configured >= 0) return configured;
  return ranksFitCpus(hostRanks) ? 20000 : 60;
}

size_t resolveShmChunkBytes(size_t configured, int hostRanks) {
  if (configured > 0) return configured;
  return ranksFitCpus(hostRanks) ? size_t{256} << 10 : size_t{512} << 10;
}

}  // namespace verbs
}  // namespace c10d
