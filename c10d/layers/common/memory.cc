#include "c10d/layers/common/memory.h"

#include <algorithm>
#include <atomic>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

namespace {

std::atomic<int64_t> live{0};
std::atomic<int64_t> peak{0};

}  // namespace

void countLayerAllocation(int64_t bytes) {
  const int64_t now = live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

LayerMemory layerMemory() {
  return {live.load(std::memory_order_relaxed), peak.load(std::memory_order_relaxed)};
}

void resetLayerMemoryPeak() {
  peak.store(live.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
