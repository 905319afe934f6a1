// Benchmark buffers on the CPU or on a CUDA device (when the perf binaries were built with the
// CUDA toolkit: C10D_PERF_HAVE_CUDA). RAII; a Buffer owns its memory. Copies are synchronous.
// No threads.
#pragma once

#include <cstddef>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

class Buffer {
 public:
  Buffer() = default;
  // Zero-filled. Throws Error (naming the size and the device) when the allocation fails.
  Buffer(size_t bytes, Device device);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  size_t size_ = 0;
  Device device_;
};

// Copies within `device`'s memory, from host memory into it, and back to host memory.
void copyOnDevice(void* dst, const void* src, size_t bytes, Device device);
void copyFromHost(void* dst, const void* hostSrc, size_t bytes, Device device);
void copyToHost(void* hostDst, const void* src, size_t bytes, Device device);

// Makes `device` current for this thread (CUDA); no-op for the CPU. Throws when the binary has no
// CUDA support or the device does not exist.
void selectDevice(Device device);
// "[cpu]" or "[0000:3b:00] NVIDIA H100 80GB HBM3", for the "# Rank ..." lines.
std::string describeDevice(Device device);
// Total memory of the device in bytes (0 = unknown / host).
size_t deviceMemory(Device device);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
