// Small helpers every store implementation uses: deadlines that cannot overflow, the time left
// until one, and key lists in error messages. Header-only (the etcd and Redis store libraries use
// them too). Thread-safe (pure functions).
#pragma once

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace storeutil {

using Clock = std::chrono::steady_clock;

using ::c10d::deadlineAfter;  // c10d/base/types.h: Clock::now() + t, saturated

// Time left until `deadline`, rounded up (a timeout must never fire before its deadline), >= 0.
inline Milliseconds remaining(Clock::time_point deadline) {
  return std::max(Milliseconds(0), std::chrono::ceil<Milliseconds>(deadline - Clock::now()));
}

// "['a', 'b', ... (N keys)]": at most `shown` keys, then the count.
inline std::string describeKeys(const std::vector<std::string>& keys, size_t shown = 8) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < keys.size() && i < shown; ++i) ss << (i ? ", '" : "'") << keys[i] << "'";
  if (keys.size() > shown) ss << ", ... (" << keys.size() << " keys)";
  ss << "]";
  return ss.str();
}

}  // namespace storeutil
C10D_NAMESPACE_END
}  // namespace c10d
