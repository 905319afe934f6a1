#include "c10d/backends/verbs/spin_wait.h"

#include <algorithm>

#include "c10d/base/launch_env.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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

namespace {
thread_local Clock::time_point foreignLoadUntil;  // relax(true) polls until then
}  // namespace

bool relax(bool pollOnForeignLoad, const std::vector<int>* jobPids) {
  const auto start = Clock::now();
  if (pollOnForeignLoad && start < foreignLoadUntil) {
    if (!otherThreadRunnable()) {
      for (int i = 0; i < 16; ++i) cpuPause();
      return false;
    }
    // A thread of ours is runnable: yield, and let the yield say whether it shares this CPU.
    foreignLoadUntil = Clock::time_point();
  }
  cpuPause();
  sched_yield();
  const auto end = Clock::now();
  if (end - start <= kYieldedAway) return false;
  if (otherThreadRunnable()) return true;
  // A peer rank's thread on this CPU (its compute, while it is behind) needs the CPU: keep
  // yielding to it. Polling would take half of the CPU it needs to catch up.
  if (pollOnForeignLoad && !(jobPids != nullptr && jobThreadRunnableHere(*jobPids)))
    foreignLoadUntil = end + kForeignLoadPoll;
  return false;
}

bool pollingThroughForeignLoad() {
  return Clock::now() < foreignLoadUntil;
}

namespace {
// Whether a thread listed in `taskDir` (/proc/<pid>/task) other than `skipTid` is running or
// runnable (state R); with cpu >= 0, only one that last ran on that CPU counts.
bool scanForRunnableThread(const char* taskDir, long skipTid, int cpu) {
  DIR* dir = opendir(taskDir);
  if (dir == nullptr) return false;  // also a process that exited meanwhile
  bool found = false;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || tid == skipTid) continue;
    char path[96], buf[1024];
    std::snprintf(path, sizeof(path), "%s/%ld/stat", taskDir, tid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread exited meanwhile
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "tid (comm) S ...": the state follows the last ')' (a comm may hold parentheses).
    const char* paren = std::strrchr(buf, ')');
    if (paren == nullptr || paren[1] != ' ' || paren[2] != 'R') continue;
    if (cpu >= 0) {
      // The CPU it last ran on: stat's field 39, the 36th after the state (field 3).
      const char* p = paren + 2;
      for (int field = 3; field < 39 && p != nullptr; ++field) {
        p = std::strchr(p, ' ');
        if (p != nullptr) ++p;
      }
      if (p == nullptr || std::atoi(p) != cpu) continue;
    }
    found = true;
    break;
  }
  closedir(dir);
  return found;
}
}  // namespace

bool otherThreadRunnable() {
  static std::atomic<int64_t> staleAt{0};  // steady clock ticks: long past at start-up
  static std::atomic<bool> lastAnswer{false};
  const auto now = Clock::now();
  if (now.time_since_epoch().count() < staleAt.load(std::memory_order_acquire))
    return lastAnswer.load(std::memory_order_relaxed);
  const bool answer =
      scanForRunnableThread("/proc/self/task", static_cast<long>(syscall(SYS_gettid)), -1);
  // A process of many threads scans for longer: its answer is kept 50x the scan, so scanning
  // never takes more than 2% of a waiter's time.
  const auto took = Clock::now() - now;
  const auto keep = std::max<Clock::duration>(kRunnableScanEvery, 50 * took);
  lastAnswer.store(answer, std::memory_order_relaxed);
  staleAt.store((now + keep).time_since_epoch().count(), std::memory_order_release);
  return answer;
}

bool jobThreadRunnableHere(const std::vector<int>& pids) {
  // Per thread: the answer depends on the caller's CPU.
  thread_local Clock::time_point staleAt;
  thread_local int cpuAsked = -1;
  thread_local bool lastAnswer = false;
  const int cpu = sched_getcpu();
  const auto now = Clock::now();
  if (cpu == cpuAsked && now < staleAt) return lastAnswer;
  const int self = static_cast<int>(getpid());
  bool answer = false;
  for (const int pid : pids) {
    if (pid <= 0 || pid == self) continue;
    char dir[32];
    std::snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    if (scanForRunnableThread(dir, -1, cpu)) {
      answer = true;
      break;
    }
  }
  staleAt = now + std::max<Clock::duration>(kRunnableScanEvery, 50 * (Clock::now() - now));
  cpuAsked = cpu;
  lastAnswer = answer;
  return answer;
}

bool requestShortSlice(int us) {
  if (us <= 0 || sched_getscheduler(0) != SCHED_OTHER) return false;
  // struct sched_attr (linux/sched/types.h; glibc declares no wrapper before 2.41).
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr{};
  attr.size = sizeof(attr);
  attr.policy = SCHED_OTHER;
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  if (errno != 0) return false;
  attr.nice = nice;
  attr.runtime = static_cast<uint64_t>(us) * 1000;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
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

std::string bootId() {
  std::string id;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, id);
  return id;
}

std::string cpuShareKey() {
  std::string key = bootId() + " ";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return key;  // overlaps no one
  constexpr int kWords = CPU_SETSIZE / 64;
  int last = 0;  // the words past the last non-zero one are left out
  uint64_t words[kWords] = {};
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    words[cpu / 64] |= uint64_t{1} << (cpu % 64);
    last = cpu / 64;
  }
  char hex[24];
  for (int w = 0; w <= last; ++w) {
    std::snprintf(hex, sizeof(hex), w == 0 ? "%llx" : ",%llx",
                  static_cast<unsigned long long>(words[w]));
    key += hex;
  }
  return key;
}

namespace {

// "<boot id> <mask words>" -> boot id and words; false if malformed.
bool parseCpuShareKey(const std::string& key, std::string* boot, std::vector<uint64_t>* words) {
  const size_t space = key.find(' ');
  if (space == std::string::npos || space == 0) return false;
  *boot = key.substr(0, space);
  words->clear();
  const char* p = key.c_str() + space + 1;
  while (*p != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long w = std::strtoull(p, &end, 16);
    if (end == p || errno != 0 || (*end != ',' && *end != '\0')) return false;
    words->push_back(w);
    p = *end == ',' ? end + 1 : end;
  }
  return true;
}

}  // namespace

int ranksSharingCpus(const std::vector<std::string>& keys, int me) {
  std::string myBoot, boot;
  std::vector<uint64_t> mine, theirs;
  if (!parseCpuShareKey(keys[static_cast<size_t>(me)], &myBoot, &mine)) return 1;
  int n = 0;
  for (const std::string& k : keys) {
    if (!parseCpuShareKey(k, &boot, &theirs) || boot != myBoot) continue;
    bool overlap = false;
    for (size_t w = 0; w < std::min(mine.size(), theirs.size()); ++w)
      overlap = overlap || (mine[w] & theirs[w]) != 0;
    n += overlap ? 1 : 0;
  }
  return std::max(n, 1);
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
C10D_NAMESPACE_END
}  // namespace c10d
