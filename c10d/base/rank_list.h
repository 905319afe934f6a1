// Rank lists in messages: "rank 2", "ranks 0-2, 5". Header-only; no threads.
#pragma once

#include <algorithm>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// "0-2, 5, 7-8" for {0, 1, 2, 5, 7, 8} (sorted, duplicates dropped); "" for none.
inline std::string formatRankRanges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ranks[i]);
    if (j > i) s += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

// "rank 2" or "ranks 0-2, 5".
inline std::string formatRanks(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return (r.size() == 1 ? "rank " : "ranks ") + formatRankRanges(r);
}

C10D_NAMESPACE_END
}  // namespace c10d
