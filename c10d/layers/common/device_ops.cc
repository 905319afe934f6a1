#include "c10d/layers/common/device_ops.h"

#include <cstring>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/float16.h"
#include "c10d/core/reduce_op.h"
#include "c10d/layers/common/memory.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

namespace {

template <typename T>
void mul(T* dst, const T* src, size_t n, T factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
}

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
    // Counted: the layers' own memory (c10d/layers/common/memory.h).
    auto words =
        std::make_shared<std::vector<uint64_t, CountingAllocator<uint64_t>>>((bytes + 7) / 8 + 1);
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

  void multiply(const Tensor& dst, const Tensor& src, double factor) override {
    checkCpu(dst, "multiply");
    checkCpu(src, "multiply");
    C10D_CHECK_EQ(dst.nbytes(), src.nbytes(), "cpuDeviceOps::multiply");
    C10D_CHECK_ARG(dst.dtype == src.dtype, "cpuDeviceOps::multiply: dtypes ", toString(dst.dtype),
                   " and ", toString(src.dtype), " differ");
    const size_t n = dst.numel;
    const float f = static_cast<float>(factor);
    switch (dst.dtype) {
      case DataType::kFloat32:
        return mul(dst.ptr<float>(), src.ptr<const float>(), n, f);
      case DataType::kFloat64:
        return mul(dst.ptr<double>(), src.ptr<const double>(), n, factor);
      case DataType::kFloat16:
        for (size_t i = 0; i < n; ++i) {
          dst.ptr<uint16_t>()[i] =
              detail::floatToHalfInline(detail::halfToFloatInline(src.ptr<uint16_t>()[i]) * f);
        }
        return;
      case DataType::kBFloat16:
        for (size_t i = 0; i < n; ++i) {
          dst.ptr<uint16_t>()[i] =
              detail::floatToBf16Inline(detail::bf16ToFloatInline(src.ptr<uint16_t>()[i]) * f);
        }
        return;
      default:
        C10D_THROW(InvalidArgument, "cpuDeviceOps::multiply: ", toString(dst.dtype),
                   " is not a floating type");
    }
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
C10D_NAMESPACE_END
}  // namespace c10d
