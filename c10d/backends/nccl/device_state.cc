#include "c10d/backends/nccl/device_state.h"

#include <cstdio>
#include <string>

#include "c10d/backends/nccl/comm.h"
#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

EventPool::~EventPool() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);  // errors ignored: destructors never throw
}

cudaEvent_t EventPool::get() {
  {
    MutexLock lock(mu_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  DeviceGuard guard(device_);
  cudaEvent_t e = nullptr;
  C10D_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                  "completion event on cuda:", device_);
  return e;
}

void EventPool::put(cudaEvent_t event) noexcept {
  if (event == nullptr) return;
  try {
    MutexLock lock(mu_);
    free_.push_back(event);
  } catch (...) {
    cudaEventDestroy(event);
  }
}

void DeviceShared::fail(std::exception_ptr e) {
  {
    MutexLock lock(mu_);
    if (!error_) error_ = std::move(e);
  }
  failed.store(true);
}

std::exception_ptr DeviceShared::error() const {
  MutexLock lock(mu_);
  return error_;
}

DeviceState::DeviceState(int d, bool highPriorityStream)
    : device(d), shared(std::make_shared<DeviceShared>(d)) {
  DeviceGuard guard(device);
  int least = 0, greatest = 0;
  C10D_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cuda:", device);
  try {
    C10D_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking,
                                                 highPriorityStream ? greatest : least),
                    "op stream on cuda:", device);
    C10D_CUDA_CHECK(cudaEventCreateWithFlags(&syncEvent, cudaEventDisableTiming), "cuda:", device);
    C10D_CUDA_CHECK(cudaMalloc(&scratch, 16), "barrier scratch on cuda:", device);
    C10D_CUDA_CHECK(cudaMemset(scratch, 0, 16), "barrier scratch on cuda:", device);
  } catch (...) {
    if (scratch != nullptr) cudaFree(scratch);
    if (syncEvent != nullptr) cudaEventDestroy(syncEvent);
    if (stream != nullptr) cudaStreamDestroy(stream);
    throw;
  }
}

DeviceState::~DeviceState() {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  if (comm != nullptr) {
    const std::string err = abortComm(comm);
    if (!err.empty()) std::fprintf(stderr, "c10d nccl: cuda:%d: %s\n", device, err.c_str());
    comm = nullptr;
  }
  // Errors below are ignored: destructors never throw, and after an abort or a device error the
  // context may refuse everything.
  if (scratch != nullptr) cudaFree(scratch);
  if (fingerprints != nullptr) cudaFree(fingerprints);
  if (syncEvent != nullptr) cudaEventDestroy(syncEvent);
  if (stream != nullptr) cudaStreamDestroy(stream);
  if (previous >= 0 && previous != device) cudaSetDevice(previous);
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  C10D_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device_) C10D_CUDA_CHECK(cudaSetDevice(device_), "cuda:", device_);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
}

int cudaDeviceCount(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why != nullptr) {
      *why = "no CUDA device: cudaGetDeviceCount failed: " + cudaErrorText(err);
    }
    cudaGetLastError();  // clear the (non-sticky) error
    return 0;
  }
  if (n <= 0 && why != nullptr) *why = "no CUDA device: cudaGetDeviceCount found 0 devices";
  return n;
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
