#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

std::string cudaErrorText(cudaError_t err) {
  return detail::str(cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
}

std::string ncclErrorText(ncclResult_t res, ncclComm_t comm) {
  std::string s =
      detail::str("nccl error ", static_cast<int>(res), " (", ncclGetErrorString(res), ")");
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') s += detail::str("; last NCCL error: ", last);
  return s;
}

void throwCudaError(cudaError_t err, const char* call, const std::string& context, const char* file,
                    int line) {
  throw Error(detail::str(call, " failed: ", cudaErrorText(err), context.empty() ? "" : " (",
                          context, context.empty() ? "" : ")", " [", file, ":", line, "]"));
}

void throwNcclError(ncclResult_t res, const char* call, ncclComm_t comm, const std::string& context,
                    const char* file, int line) {
  const std::string msg =
      detail::str(call, " failed: ", ncclErrorText(res, comm), context.empty() ? "" : " (", context,
                  context.empty() ? "" : ")", " [", file, ":", line, "]");
  switch (res) {
    case ncclRemoteError:
    case ncclSystemError:
      throw CommError(msg);
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      throw InvalidArgument(msg);
    default:
      throw Error(msg);
  }
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
