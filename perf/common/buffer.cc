#include "perf/common/buffer.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

#if C10D_PERF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

constexpr std::align_val_t kAlign{4096};

#if C10D_PERF_HAVE_CUDA
// Every CUDA runtime call goes through here: the failure names the call and CUDA's message.
#define C10D_PERF_CUDA(call)                                                            \
  do {                                                                                  \
    cudaError_t c10d_err_ = (call);                                                     \
    if (c10d_err_ != cudaSuccess)                                                       \
      C10D_THROW(::c10d::Error, #call " failed: ", cudaGetErrorString(c10d_err_), " (", \
                 static_cast<int>(c10d_err_), ")");                                     \
  } while (0)
#else
[[noreturn]] void noCuda() {
  C10D_THROW(InvalidArgument,
             "--device cuda: this perf binary was built without the CUDA toolkit "
             "(reconfigure with CUDAToolkit available)");
}
#endif

}  // namespace

Buffer::Buffer(size_t bytes, Device device) : size_(bytes), device_(device) {
  const size_t n = bytes == 0 ? 1 : bytes;
  if (device.isCPU()) {
    try {
      data_ = ::operator new(n, kAlign);
    } catch (const std::bad_alloc&) {
      C10D_THROW(Error, "cannot allocate ", bytes, " bytes of host memory for a perf buffer");
    }
    std::memset(data_, 0, n);
    return;
  }
#if C10D_PERF_HAVE_CUDA
  selectDevice(device);
  C10D_PERF_CUDA(cudaMalloc(&data_, n));
  C10D_PERF_CUDA(cudaMemset(data_, 0, n));
#else
  noCuda();
#endif
}

Buffer::~Buffer() {
  release();
}

Buffer::Buffer(Buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(o.size_), device_(o.device_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = o.size_;
    device_ = o.device_;
  }
  return *this;
}

void Buffer::release() noexcept {
  if (data_ == nullptr) return;
  if (device_.isCPU()) {
    ::operator delete(data_, kAlign);
  } else {
#if C10D_PERF_HAVE_CUDA
    cudaFree(data_);  // destructors never throw: an error here is ignored
#endif
  }
  data_ = nullptr;
}

void copyOnDevice(void* dst, const void* src, size_t bytes, Device device) {
  if (bytes == 0 || dst == src) return;
  if (device.isCPU()) {
    std::memmove(dst, src, bytes);
    return;
  }
#if C10D_PERF_HAVE_CUDA
  C10D_PERF_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
#else
  noCuda();
#endif
}

void copyFromHost(void* dst, const void* hostSrc, size_t bytes, Device device) {
  if (bytes == 0) return;
  if (device.isCPU()) {
    std::memmove(dst, hostSrc, bytes);
    return;
  }
#if C10D_PERF_HAVE_CUDA
  C10D_PERF_CUDA(cudaMemcpy(dst, hostSrc, bytes, cudaMemcpyHostToDevice));
#else
  noCuda();
#endif
}

void copyToHost(void* hostDst, const void* src, size_t bytes, Device device) {
  if (bytes == 0) return;
  if (device.isCPU()) {
    std::memmove(hostDst, src, bytes);
    return;
  }
#if C10D_PERF_HAVE_CUDA
  C10D_PERF_CUDA(cudaMemcpy(hostDst, src, bytes, cudaMemcpyDeviceToHost));
#else
  noCuda();
#endif
}

void selectDevice(Device device) {
  if (device.isCPU()) return;
#if C10D_PERF_HAVE_CUDA
  C10D_PERF_CUDA(cudaSetDevice(device.index));
#else
  noCuda();
#endif
}

std::string describeDevice(Device device) {
  if (device.isCPU()) return "[cpu]";
#if C10D_PERF_HAVE_CUDA
  cudaDeviceProp prop;
  C10D_PERF_CUDA(cudaGetDeviceProperties(&prop, device.index));
  char buf[512];
  std::snprintf(buf, sizeof(buf), "[%04x:%02x:%02x] %s", prop.pciDomainID, prop.pciBusID,
                prop.pciDeviceID, prop.name);
  return buf;
#else
  noCuda();
#endif
}

size_t deviceMemory(Device device) {
  if (device.isCPU()) return 0;
#if C10D_PERF_HAVE_CUDA
  size_t freeBytes = 0, total = 0;
  C10D_PERF_CUDA(cudaMemGetInfo(&freeBytes, &total));
  return total;
#else
  noCuda();
#endif
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
