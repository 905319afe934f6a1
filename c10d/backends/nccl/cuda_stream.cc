#include "c10d/backends/nccl/cuda_stream.h"

#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

// Indexed by device ordinal; grows on demand.
thread_local std::vector<cudaStream_t> tlsStreams;

}  // namespace

cudaStream_t currentStream(int device) {
  if (device < 0 || static_cast<size_t>(device) >= tlsStreams.size()) return nullptr;
  return tlsStreams[static_cast<size_t>(device)];
}

void setCurrentStream(int device, cudaStream_t stream) {
  C10D_CHECK_ARG(device >= 0 && device < 4096, "setCurrentStream: device ", device,
                 " is not a CUDA ordinal");
  if (static_cast<size_t>(device) >= tlsStreams.size()) {
    if (stream == nullptr) return;
    tlsStreams.resize(static_cast<size_t>(device) + 1, nullptr);
  }
  tlsStreams[static_cast<size_t>(device)] = stream;
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
