// The verbs engine's waits beside the application's compute (c10d/backends/verbs/spin_wait.h): a
// yield that gives the CPU away to a thread of this process ends the spin, another process's load
// does not, and the engine threads ask for a short scheduler slice.
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/base/abi.h"
#include "tests/backends/verbs_test_util.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

using test::uniqueTempPath;

// A CPU hog pinned to the calling thread's CPU (the caller pinned there too) for the scope's
// lifetime: what the application's compute is to a waiting engine thread.
class HogOnMyCpu {
 public:
  HogOnMyCpu() {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_), 0);
    EXPECT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
    hog_ = std::thread([this, one] {
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
      started_.store(true);
      while (!stop_.load(std::memory_order_relaxed)) cpuPause();
    });
    while (!started_.load()) std::this_thread::yield();
  }
  ~HogOnMyCpu() {
    stop_.store(true);
    hog_.join();
    pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  }

 private:
  cpu_set_t saved_;
  std::atomic<bool> started_{false}, stop_{false};
  std::thread hog_;
};

// relax() says when its sched_yield gave the CPU away: with a busy thread on the same CPU the
// yield runs it for a slice, far past kYieldedAway.
TEST(VerbsSpin, YieldToABusyThreadOnTheCpuSaysSo) {
  HogOnMyCpu hog;
  int away = 0;
  for (int i = 0; i < 200 && away == 0; ++i) away += relax() ? 1 : 0;
  EXPECT_GT(away, 0) << "200 yields beside a busy thread on the same CPU never gave it away";
}

// Pins the calling thread to its CPU and forks a busy child process there (it inherits the
// one-CPU mask); the child is killed and the mask restored at the end of the scope.
class BusyProcessOnMyCpu {
 public:
  BusyProcessOnMyCpu() {
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    CPU_ZERO(&one_);
    CPU_SET(sched_getcpu(), &one_);
    pinned_ = pthread_setaffinity_np(pthread_self(), sizeof(one_), &one_) == 0;
    child_ = fork();
    if (child_ == 0) {
      for (;;) cpuPause();
    }
  }
  ~BusyProcessOnMyCpu() {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  }
  bool ok() const { return pinned_ && child_ > 0; }
  const cpu_set_t& cpu() const { return one_; }
  pid_t pid() const { return child_; }

 private:
  cpu_set_t saved_, one_;
  bool pinned_ = false;
  pid_t child_ = -1;
};

// Another process's load on the CPU does not end the spin (staying runnable is what keeps ranks
// on CPUs of their own beside it): the yields give the CPU away, but no thread of ours is runnable.
TEST(VerbsSpin, YieldToAnotherProcessKeepsSpinning) {
  BusyProcessOnMyCpu busy;
  ASSERT_TRUE(busy.ok());
  // The cached answer of an earlier scan (a test's own busy thread) expires first: it is kept
  // kRunnableScanEvery or 50 scans' time (slow under a sanitizer).
  std::this_thread::sleep_for(20 * kRunnableScanEvery);
  // A stop means a thread of ours was runnable: under a sanitizer its own background thread can
  // be, now and then. Wrongly stopping for another process would stop in every try.
  int stops = 0;
  auto took = Clock::duration::zero();
  for (int attempt = 0; attempt < 3; ++attempt) {
    stops = 0;
    const auto start = Clock::now();
    for (int i = 0; i < 200; ++i) stops += relax() ? 1 : 0;
    took = Clock::now() - start;
    if (stops == 0) break;
    std::this_thread::sleep_for(20 * kRunnableScanEvery);
  }
  EXPECT_EQ(stops, 0) << "in each of 3 tries";
  EXPECT_GT(took, 200 * std::chrono::microseconds(1)) << "the busy child never ran";
}

// Where the ranks have a CPU each (relax(true)), a yield that went to another process turns the
// calling thread's spin into polling for kForeignLoadPoll: yielding again would hand that process a
// slice at every wait. relax(false) (ranks that share CPUs: the CPU may be a peer's) keeps
// yielding, and so does relax(true) when the process is a peer rank's (its compute, while it is
// behind, needs this CPU to catch up).
TEST(VerbsSpin, AYieldToAnotherProcessTurnsTheSpinIntoPolling) {
  BusyProcessOnMyCpu busy;
  ASSERT_TRUE(busy.ok());
  std::this_thread::sleep_for(20 * kRunnableScanEvery);  // an earlier scan's answer expires
  // Each case on a thread of its own (the polling state is per thread), on this CPU.
  auto run = [&](bool pollOnForeignLoad, const std::vector<int>* jobPids, int* stops,
                 bool* polled) {
    std::thread t([&] {
      pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &busy.cpu());
      for (int i = 0; i < 200 && !*polled; ++i) {
        *stops += relax(pollOnForeignLoad, jobPids) ? 1 : 0;
        *polled = pollingThroughForeignLoad();
      }
      for (int i = 0; i < 1000 && *polled; ++i) *stops += relax(pollOnForeignLoad, jobPids) ? 1 : 0;
    });
    t.join();
  };
  const std::vector<int> strangers{static_cast<int>(getpid())};
  const std::vector<int> job{static_cast<int>(getpid()), static_cast<int>(busy.pid())};
  int stopsYielding = 0, stopsPeer = 0, stopsPolling = 0;
  bool polledYielding = false, polledPeer = false, polledPolling = false;
  run(false, nullptr, &stopsYielding, &polledYielding);
  run(true, &job, &stopsPeer, &polledPeer);
  run(true, &strangers, &stopsPolling, &polledPolling);
  EXPECT_FALSE(polledYielding) << "relax(false) stopped yielding";
  EXPECT_FALSE(polledPeer) << "relax(true) polled beside a peer rank's busy process";
  // (Stops, a thread of ours runnable, are YieldToAnotherProcessKeepsSpinning's to count: a
  // sanitizer's own thread can be one.)
  EXPECT_TRUE(polledPolling) << "200 yields beside a busy process never went to it ("
                             << stopsPolling << " found a thread of ours runnable)";
}

// A waiter whose spin phase is 10 s, beside a busy thread on its CPU, goes to sleep on the futex
// soon (its first yield that gives the CPU away) and is woken from there; spinning on, it would
// hold its CPU (and its peer, which needs it) for the whole phase.
TEST(VerbsSpin, WaiterBesideComputeSleepsInsteadOfSpinning) {
  WaitWord w;
  std::atomic<bool> sawSleeper{false};
  std::thread waker([&] {
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (w.sleepers.load() == 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    sawSleeper.store(w.sleepers.load() != 0);
    w.value.fetch_add(1);
    wake(w);
  });
  {
    HogOnMyCpu hog;
    const auto start = Clock::now();
    waitUntil(
        w, 0, [&] { return w.value.load() != 0; }, 0, 10 * 1000 * 1000, true, nullptr, [] {});
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  }
  waker.join();
  EXPECT_TRUE(sawSleeper.load()) << "the waiter spun instead of sleeping";
}

// The engine threads ask for a C10D_ENGINE_SLICE_US slice (default 100 us), which
// /proc/self/task/*/sched shows as se.slice on kernels that have it (EEVDF slices, 6.12+); 0
// leaves the kernel's default.
TEST(VerbsSpin, EngineThreadsAskForAShortSlice) {
  EXPECT_FALSE(requestShortSlice(0));
  auto slices = [] {
    std::map<std::string, long long> out;
    DIR* d = opendir("/proc/self/task");
    if (d == nullptr) return out;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string dir = std::string("/proc/self/task/") + e->d_name;
      std::string comm, line;
      std::getline(std::ifstream(dir + "/comm") >> std::ws, comm);
      std::ifstream sched(dir + "/sched");
      while (std::getline(sched, line))
        if (line.rfind("se.slice", 0) == 0) out[comm] = std::stoll(line.substr(line.find(':') + 1));
    }
    closedir(d);
    return out;
  };
  if (slices().empty()) GTEST_SKIP() << "this kernel shows no se.slice in /proc/self/task/*/sched";
  // The threads name themselves, then ask for the slice: read until both show it (or 5 s).
  auto settled = [&](long long want) {
    std::map<std::string, long long> s;
    for (int i = 0; i < 500; ++i) {
      s = slices();
      if (s.count("c10d-verbs-coll") && s.count("c10d-verbs-p2p") &&
          (want == 0 || (s["c10d-verbs-coll"] == want && s["c10d-verbs-p2p"] == want)))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return s;
  };
  {
    auto pg = makeVerbs(uniqueTempPath("verbs-slice"), 0, 1, {});
    auto s = settled(100000);
    EXPECT_EQ(s["c10d-verbs-coll"], 100000);
    EXPECT_EQ(s["c10d-verbs-p2p"], 100000);
  }
  {
    auto pg = makeVerbs(uniqueTempPath("verbs-slice"), 0, 1, {{"C10D_ENGINE_SLICE_US", "0"}});
    auto s = settled(0);
    ASSERT_TRUE(s.count("c10d-verbs-coll"));
    EXPECT_NE(s["c10d-verbs-coll"], 100000) << "0 must leave the kernel's default";
  }
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
