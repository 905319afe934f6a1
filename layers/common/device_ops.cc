#include "layers/common/device_ops.h"

#include <cstring>
#include <vector>

#include "c10d/error.h"
#include "c10d/reduce_op.h"

namespace c10d {
namespace layers {

namespace {

void checkCpu(const Tensor& t, const char* what) {
  C10D_CHECK_ARG(t.device.isCPU(), "cpuDeviceOps::", what, ": tensor on ", toString(t.device),
                 "; pass a DeviceOps for that device");
}

class CpuDeviceOps final : public DeviceOps {
 public:
  std::shared_ptr<void> allocate(Device device, size_t bytes) override {
    C10D_CHECK_ARG(device.isCPU(), "cpuDeviceOps::allocate: device ", toString(device),
                   "; pass a DeviceOps for that device");
    // 8-byte words: aligned for every DataType, zero-initialised by the vector.
    auto words = std::make_shared<std::vector<uint64_t>>((bytes + 7) / 8 + 1);
    return std::shared_ptr<void>(words, words->data());
  }

  void copy(const Tensor& dst, const Tensor& src) override {
    checkCpu(dst, "copy");
    checkCpu(src, "copy");
    C10D_CHECK_EQ(dst.nbytes(), src.nbytes(), "cpuDeviceOps::copy");
    if (dst.nbytes() > 0 && dst.data != src.data) std::memmove(dst.data, src.data, dst.nbytes());
  }

  void zero(const Tensor& t) override {
    checkCpu(t, "zero");
    if (t.nbytes() > 0) std::memset(t.data, 0, t.nbytes());
  }

  void divide(const Tensor& t, int64_t divisor) override {
    checkCpu(t, "divide");
    if (t.numel > 0 && divisor != 1) c10d::divide(t.data, t.numel, t.dtype, divisor);
  }

  void upload(const Tensor& dst, const void* src) override {
    checkCpu(dst, "upload");
    if (dst.nbytes() > 0) std::memcpy(dst.data, src, dst.nbytes());
  }

  void download(void* dst, const Tensor& src) override {
    checkCpu(src, "download");
    if (src.nbytes() > 0) std::memcpy(dst, src.data, src.nbytes());
  }
};

}  // namespace

std::shared_ptr<DeviceOps> cpuDeviceOps() {
  static const std::shared_ptr<DeviceOps> ops = std::make_shared<CpuDeviceOps>();
  return ops;
}

}  // namespace layers
}  // namespace c10d
