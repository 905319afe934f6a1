// Launch: what an op's body (the NCCL calls) needs while ProcessGroupNccl::launch() holds the
// device's communicator. Private to the backend.
//
// Bodies run inside ncclGroupStart/End, so their NCCL calls only queue work; anything that must
// happen after the kernels are enqueued (copies out of a temporary, freeing it, destroying a
// PREMUL_SUM op) goes to `after`, which launch() runs after the outermost ncclGroupEnd (for a
// coalesced block: at endCoalescing()).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/reduce_op.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

struct Launch {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
  void* scratch = nullptr;  // 16 bytes of device memory (barrier)
  const Work* work = nullptr;
  std::vector<std::function<void()>>* after = nullptr;

  // "allreduce #5 in group nccl:world on cuda:0 (rank 1 of 2)", for error messages.
  std::string what() const;
  // The NCCL op for `op` on `dtype`; PREMUL_SUM creates one, destroyed after the group ends.
  ncclRedOp_t redOp(const ReduceOp& op, DataType dtype);
  // `bytes` of stream-ordered device memory on the op stream; free it with deferFree().
  void* temp(size_t bytes);
  void deferFree(void* p);
  // Queues an asynchronous device-to-device copy on the op stream now (before the group's
  // kernels) or after them.
  void copyNow(void* dst, const void* src, size_t bytes);
  void copyAfter(void* dst, const void* src, size_t bytes);
};

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
