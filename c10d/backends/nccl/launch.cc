#include "c10d/backends/nccl/launch.h"

#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

std::string Launch::what() const {
  return detail::str(work != nullptr ? work->describe() : std::string("op"), " on cuda:", device,
                     " (rank ", rank, " of ", size, ")");
}

ncclRedOp_t Launch::redOp(const ReduceOp& op, DataType dtype) {
  if (op.kind != ReduceOp::PREMUL_SUM) return toNcclRedOp(op.kind, dtype);
  PreMulScalar scalar = makePreMulScalar(op.scale, dtype);
  ncclRedOp_t r{};
  C10D_NCCL_CHECK(ncclRedOpCreatePreMulSum(&r, scalar.bytes, toNcclDataType(dtype),
                                           ncclScalarHostImmediate, comm),
                  comm, what(), ", scale ", op.scale);
  ncclComm_t c = comm;
  after->push_back([r, c] { ncclRedOpDestroy(r, c); });
  return r;
}

void* Launch::temp(size_t bytes) {
  void* p = nullptr;
  C10D_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream), what(), ": temporary of ", bytes, " bytes");
  return p;
}

void Launch::deferFree(void* p) {
  cudaStream_t s = stream;
  after->push_back([p, s] { cudaFreeAsync(p, s); });
}

void Launch::copyNow(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  C10D_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), what(), ": ",
                  bytes, " bytes");
}

void Launch::copyAfter(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  cudaStream_t s = stream;
  std::string ctx = what();
  after->push_back([dst, src, bytes, s, ctx] {
    C10D_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), ctx, ": ", bytes,
                    " bytes");
  });
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
