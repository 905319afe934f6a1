#include "c10d/backends/nccl/register.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "c10d/backends/nccl/config.h"
#include "c10d/backends/nccl/cuda_stream.h"
#include "c10d/backends/nccl/device_state.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/base/abi.h"
#include "c10d/core/backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace nccl {

bool ncclAvailable(std::string* why) {
  std::string reason;
  if (cudaDeviceCount(&reason) > 0) return true;
  if (why != nullptr) *why = reason;
  return false;
}

std::string ncclVersionString() {
  int v = 0;
  std::string s = "NCCL ";
  if (ncclGetVersion(&v) == ncclSuccess) {
    // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z from 2.9 on.
    s += detail::str(v / 10000, ".", (v / 100) % 100, ".", v % 100);
  } else {
    s += "(unknown version)";
  }
  // The compile-time version: asking the runtime could initialise CUDA, which must not happen in
  // a process that forks ranks afterwards.
  s += detail::str(" (built with CUDA runtime ", CUDART_VERSION, ")");
  return s;
}

}  // namespace nccl

BackendDefinition ncclBackend() {
  BackendInfo info;
  info.name = "nccl";
  info.description = nccl::ncclVersionString() +
                     " on CUDA streams: every collective for CUDA tensors (Device{kCUDA, i})";
  info.priority = 5;
  info.available = [](std::string* reason) { return nccl::ncclAvailable(reason); };
  info.describeConfig = [] { return nccl::describeConfig(nccl::parseConfig({})); };
  info.setCurrentStream = [](int device, void* stream) {
    nccl::setCurrentStream(device, static_cast<cudaStream_t>(stream));
  };
  info.currentStream = [](int device) -> void* { return nccl::currentStream(device); };
  return {std::move(info), [](std::shared_ptr<Store> store, int rank, int size,
                              const ProcessGroup::Options& options) {
            return std::static_pointer_cast<ProcessGroup>(
                std::make_shared<nccl::ProcessGroupNccl>(std::move(store), rank, size, options));
          }};
}

C10D_NAMESPACE_END
}  // namespace c10d
