// What the layers hold in memory of their own: their buffers (DDP buckets, ZeRO's flat buffer
// and shards, optimizer state) are allocated through CountingAllocator, which keeps a process-wide
// count of the bytes live and the peak. So what a layer promises (ZeRO: state of 1/N of the
// parameters) is measured, not computed: a stray full-size allocation shows in the count.
// The framework's tensors (parameters, gradients) are not counted: the layers only view them.
// Thread-safe (relaxed atomics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

struct LayerMemory {
  int64_t liveBytes = 0;  // allocated by the layers and not yet freed, in this process
  int64_t peakBytes = 0;  // the most liveBytes has been since the process started or resetPeak
};

LayerMemory layerMemory();
// Starts a new peak at the bytes live now (to measure one phase, e.g. one training step).
void resetLayerMemoryPeak();

// CountingAllocator's count (negative: freed).
void countLayerAllocation(int64_t bytes);

template <typename T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <typename U>
  CountingAllocator(const CountingAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std's
  T* allocate(size_t n) {
    T* p = std::allocator<T>().allocate(n);
    countLayerAllocation(static_cast<int64_t>(n * sizeof(T)));
    return p;
  }
  void deallocate(T* p, size_t n) noexcept {
    countLayerAllocation(-static_cast<int64_t>(n * sizeof(T)));
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const CountingAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const CountingAllocator<U>&) const noexcept {
    return false;
  }
};

// The layers' own float buffers.
using Floats = std::vector<float, CountingAllocator<float>>;

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
