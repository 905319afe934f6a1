// Fault-injection suite, internal: the page the harness and its forked ranks share (one
// MAP_SHARED | MAP_ANONYMOUS mapping per injection, made before the forks) and the rank's side.
// Lock-free atomics only: they work across processes. Times are CLOCK_MONOTONIC nanoseconds
// (steady_clock), one clock for every process of the host.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "c10d/base/abi.h"
#include "tests/faults/fault_injection.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace detail {

constexpr int kMaxRanks = 8;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum Phase : int { kStarting = 0, kReady = 1, kReported = 2, kDone = 3 };

struct RankSlot {
  std::atomic<int> phase{kStarting};
  std::atomic<int> opIndex{-1};  // the op issued last
  // Written by the rank before it sets phase to kReported; read by the harness after that.
  char outcome[32];
  char opName[32];
  char message[1024];
  int64_t errNs = 0;
  int64_t issueNs = 0;  // of the failing op
  int failedOp = -1;
  uint64_t seq = 0;
  int fdsBefore = -1;
  int fdsAfter = -1;  // written before phase kDone
};

struct SharedPage {
  std::atomic<int> storePort{0};
  std::atomic<int64_t> injectNs{0};  // 0: not (yet) injected
  RankSlot ranks[kMaxRanks];
};

// Whether rank r outlives the fault (the killed or stopped rank does not).
inline bool survives(const Injection& inj, int r) {
  const bool dies = inj.fault == Fault::kSigkill || inj.fault == Fault::kSigstop;
  return !(dies && r == inj.victim);
}

// Polls `done()` every 100 us until it holds or `limit` passed; returns done().
template <typename Pred>
bool waitFor(Pred done, Milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// The rank's whole life in one injection (forked child of runInjection).
void rankMain(const Injection& inj, SharedPage& shared, int rank);

// Open file descriptors of this process (/proc/self/fd, not counting the one reading it).
int countFds();

}  // namespace detail
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
