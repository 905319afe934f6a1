// c10d/base/fast_clock.h: the TSC-derived clock stays with steady_clock, from one thread and
// several.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/fast_clock.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

// Within this of steady_clock read around it: the scale's error over one anchor interval (10 ms)
// is nanoseconds; NTP's slewing bound (500 ppm) makes 5 us; the rest is a preempted read.
constexpr int64_t kToleranceNs = 50'000;

// Reads for `ms`, each between two steady_clock reads; returns the largest distance outside them.
int64_t worstStray(int ms, int64_t* reads) {
  const int64_t end = steadyNowNs() + ms * 1'000'000LL;
  int64_t worst = 0;
  int64_t n = 0;
  for (;;) {
    const int64_t before = steadyNowNs();
    const int64_t fast = fastNowNs();
    const int64_t after = steadyNowNs();
    worst = std::max({worst, before - fast, fast - after});
    ++n;
    if (after > end) break;
  }
  *reads = n;
  return worst;
}

TEST(FastClock, FollowsSteadyClock) {
  int64_t reads = 0;
  // 60 ms: the calibration's first 2 ms, then several re-anchors.
  EXPECT_LE(worstStray(60, &reads), kToleranceNs) << reads << " reads";
  EXPECT_GT(reads, 1000);
}

TEST(FastClock, FollowsSteadyClockFromSeveralThreads) {
  std::vector<int64_t> worst(4, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < worst.size(); ++i) {
    threads.emplace_back([&worst, i] {
      int64_t reads = 0;
      worst[i] = worstStray(40, &reads);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < worst.size(); ++i) EXPECT_LE(worst[i], kToleranceNs) << "thread " << i;
}

TEST(FastClock, AdvancesLikeSteadyClockOverASleep) {
  const int64_t s0 = steadyNowNs(), f0 = fastNowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int64_t f1 = fastNowNs(), s1 = steadyNowNs();
  EXPECT_NEAR(static_cast<double>(f1 - f0), static_cast<double>(s1 - s0), kToleranceNs);
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
