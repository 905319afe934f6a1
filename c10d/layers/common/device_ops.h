// DeviceOps: the few memory operations the layers (DDP Reducer, ZeRO) need on the devices their
// tensors live on, kept behind an interface so that the layers never depend on CUDA.
//
// The layers allocate their own flat buffers (gradient buckets, shards), copy gradients in and out
// of them, zero them and divide them by the world size. On CPU, cpuDeviceOps() does this with
// memcpy / memset / c10d::divide. A framework whose tensors live on a GPU passes its own
// implementation (cudaMallocAsync / cudaMemcpyAsync on its current stream, a scale kernel); the
// NCCL backend orders its collectives after the caller's current stream, so stream-ordered
// implementations are enough.
//
// Threads: an implementation may be called from any thread that calls into a layer (e.g. the
// backward thread that calls Reducer::markReady); cpuDeviceOps() is stateless and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // `bytes` of zero-filled memory on `device`, aligned for every DataType; freed when the last
  // owner of the returned pointer drops it. Never null (throws Error when it cannot allocate).
  virtual std::shared_ptr<void> allocate(Device device, size_t bytes) = 0;
  // dst <- src: same dtype, numel and device (checked by the callers).
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  // t <- 0.
  virtual void zero(const Tensor& t) = 0;
  // t /= divisor, element-wise (integer types toward zero).
  virtual void divide(const Tensor& t, int64_t divisor) = 0;
  // dst <- src * factor for floating dtypes, as torch multiplies a tensor by a Python number: the
  // factor is rounded to the dtype's compute type (float for f16, bf16 and f32; double for f64),
  // the product computed there and rounded once to the dtype. dst may be src. (The DDP Reducer
  // scales each gradient by 1 / world size this way, as torch's DDP does, bit for bit.)
  virtual void multiply(const Tensor& dst, const Tensor& src, double factor) = 0;
  // Host <-> device transfers of t.nbytes() bytes (small metadata: fingerprints, orders, maps).
  virtual void upload(const Tensor& dst, const void* src) = 0;
  virtual void download(void* dst, const Tensor& src) = 0;
};

// Host memory. Shared, stateless.
std::shared_ptr<DeviceOps> cpuDeviceOps();

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
