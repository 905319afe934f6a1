// The one wrapper every cuda* and nccl* call of the nccl backend goes through.
//
// C10D_CUDA_CHECK(call, context...) and C10D_NCCL_CHECK(call, context...) throw when the call
// fails; the message names the call as written, the library's error name and string (for NCCL also
// ncclGetLastError's detail), the streamed context (rank, op, group, device) and file:line.
// C10D_NCCL_CHECK accepts ncclInProgress (a nonblocking communicator's "still working"); callers
// then poll the communicator (comm.h) before touching it again.
//
// The only calls not checked this way are best-effort cleanup whose failure is deliberately
// ignored (cudaFree / cudaEventDestroy / cudaStreamDestroy in destructors, ncclRedOpDestroy and
// cudaFreeAsync after an op, restoring the previous device) and the calls whose result is
// inspected by hand (ncclCommGetAsyncError, ncclCommAbort, ncclGroupEnd, cudaEventQuery).
//
// Error types: a CUDA failure is an Error; ncclRemoteError / ncclSystemError (a peer or the network
// went away) are CommError; ncclInvalidArgument / ncclInvalidUsage are InvalidArgument; the rest
// Error. Private to the backend: includes the CUDA and NCCL headers.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

// "cudaErrorNoDevice (no CUDA-capable device is detected)"
std::string cudaErrorText(cudaError_t err);
// "ncclRemoteError (remote process exited or there was a network error); last error: ..."
std::string ncclErrorText(ncclResult_t res, ncclComm_t comm = nullptr);

[[noreturn]] void throwCudaError(cudaError_t err, const char* call, const std::string& context,
                                 const char* file, int line);
[[noreturn]] void throwNcclError(ncclResult_t res, const char* call, ncclComm_t comm,
                                 const std::string& context, const char* file, int line);

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d

#define C10D_CUDA_CHECK(call, ...)                                                                \
  do {                                                                                            \
    cudaError_t c10d_cuda_err_ = (call);                                                          \
    if (c10d_cuda_err_ != cudaSuccess) {                                                          \
      ::c10d::nccl::throwCudaError(c10d_cuda_err_, #call, ::c10d::detail::str("", ##__VA_ARGS__), \
                                   __FILE__, __LINE__);                                           \
    }                                                                                             \
  } while (0)

// `comm` (may be null) is asked for ncclGetLastError's detail.
#define C10D_NCCL_CHECK(call, comm, ...)                                                        \
  do {                                                                                          \
    ncclResult_t c10d_nccl_res_ = (call);                                                       \
    if (c10d_nccl_res_ != ncclSuccess && c10d_nccl_res_ != ncclInProgress) {                    \
      ::c10d::nccl::throwNcclError(c10d_nccl_res_, #call, (comm),                               \
                                   ::c10d::detail::str("", ##__VA_ARGS__), __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
