#include "c10d/core/rendezvous_wait.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/rank_list.h"
#include "c10d/core/diagnostics_config.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

using Clock = std::chrono::steady_clock;
constexpr Milliseconds kMaxProgressInterval{60000};
constexpr Milliseconds kYear{365LL * 24 * 3600 * 1000};

std::string elapsedText(Clock::duration d) {
  const long long ms = std::chrono::duration_cast<Milliseconds>(d).count();
  if (ms < 10000) return detail::str(ms / 1000, ".", (ms % 1000) / 100, " s");
  return detail::str(ms / 1000, " s");
}

}  // namespace

void waitForRanks(Store& store, const std::vector<std::string>& keys, const std::vector<int>& ranks,
                  const RankWait& how) {
  C10D_CHECK_EQ(keys.size(), ranks.size(), "waitForRanks: one rank per key");
  const int progressMs =
      how.progressMs >= 0 ? how.progressMs : DiagnosticsConfig::load().rendezvousProgressMs;
  const auto start = Clock::now();
  const auto deadline = start + std::min(how.timeout, kYear);
  Milliseconds interval{progressMs};
  auto nextProgress = progressMs > 0 ? start + interval : Clock::time_point::max();

  std::vector<size_t> missing(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) missing[i] = i;
  auto missingKeys = [&] {
    std::vector<std::string> k;
    for (size_t i : missing) k.push_back(keys[i]);
    return k;
  };
  auto missingRanks = [&] {
    std::vector<int> r;
    for (size_t i : missing) r.push_back(ranks[i]);
    return r;
  };
  // Drops the keys that exist now from `missing`.
  auto refresh = [&] {
    std::vector<size_t> still;
    for (size_t i : missing) {
      if (!store.check({keys[i]})) still.push_back(i);
    }
    missing.swap(still);
  };

  for (;;) {
    const auto now = Clock::now();
    const auto until = std::min(deadline, nextProgress);
    const auto slice =
        std::max(Milliseconds(0), std::chrono::duration_cast<Milliseconds>(until - now));
    try {
      store.wait(missingKeys(), slice);
      return;
    } catch (const TimeoutError&) {
      // Fall through: either a progress line is due or the deadline passed.
    }
    refresh();
    if (missing.empty()) return;
    const int total = static_cast<int>(keys.size());
    const int joined = total - static_cast<int>(missing.size());
    if (Clock::now() >= deadline) {
      std::string keyList;
      for (size_t i : missing) keyList += (keyList.empty() ? "'" : ", '") + keys[i] + "'";
      C10D_THROW(TimeoutError, "group ", how.group, " (rank ", how.rank,
                 "): ", formatRanks(missingRanks()), " of ", total, " never ", how.what, " within ",
                 how.timeout.count(), " ms (", joined, " of ", total, " did; store key",
                 missing.size() == 1 ? " " : "s ", keyList,
                 " never set: is that process started, with the same MASTER_ADDR/MASTER_PORT "
                 "and WORLD_SIZE?)");
    }
    if (Clock::now() >= nextProgress) {
      std::fprintf(stderr, "c10d: group %s (rank %d): %d of %d ranks %s after %s; waiting for %s\n",
                   how.group.c_str(), how.rank, joined, total, how.what.c_str(),
                   elapsedText(Clock::now() - start).c_str(), formatRanks(missingRanks()).c_str());
      interval = std::min(interval * 2, kMaxProgressInterval);
      nextProgress = Clock::now() + interval;
    }
  }
}

C10D_NAMESPACE_END
}  // namespace c10d
