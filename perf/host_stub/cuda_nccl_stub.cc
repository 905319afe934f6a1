// A stand-in libcudart.so.13 and libnccl.so.2 that do no device work: every call succeeds at
// once, "device memory" is host memory, events have always fired. With it the nccl backend and
// the perf binaries run on a machine without a GPU, so that the host path an op costs on top of
// NCCL's own (the Work, the events, the bookkeeping) can be profiled with `perf` here:
//
//   LD_LIBRARY_PATH=build/host_stub perf record -g build/bin/all_reduce_perf
//       --backend nccl --device cuda -b 8 -e 8 -n 200000 -w 1000 -c 0   (one command line)
//
// Only for one rank's host path: a collective copies its input to its output (one rank's result,
// done on the calling thread) and ranks never meet. Not linked
// into anything; built as two shared libraries under build/host_stub (perf/CMakeLists.txt).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>

namespace {

#ifdef C10D_STUB_CUDART
thread_local int currentDevice = 0;
#endif

// Distinct non-null handles for streams, events and communicators.
template <typename T>
T newHandle() {
  return reinterpret_cast<T>(std::malloc(64));
}

#ifdef C10D_STUB_NCCL
size_t typeBytes(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 1;
  }
}

ncclResult_t oneRankCopy(const void* send, void* recv, size_t count, ncclDataType_t type) {
  if (send != recv) std::memmove(recv, send, count * typeBytes(type));
  return ncclSuccess;
}
#endif  // C10D_STUB_NCCL

}  // namespace

extern "C" {

// Built twice: with C10D_STUB_CUDART as libcudart, with C10D_STUB_NCCL as libnccl (each library
// must define only its own symbols, or the first one loaded would answer for both).
#ifdef C10D_STUB_CUDART
// ---- CUDA runtime -------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = currentDevice;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  currentDevice = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int) {
  std::memset(prop, 0, sizeof(*prop));
  std::strcpy(prop->name, "host stub (no device work)");
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  *free = *total = size_t{1} << 36;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -1;
  return cudaSuccess;
}
const char* cudaGetErrorName(cudaError_t) {
  return "cudaStubError";
}
const char* cudaGetErrorString(cudaError_t) {
  return "host stub";
}
cudaError_t cudaGetLastError() {
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) {
  return cudaMalloc(p, bytes);
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
  return cudaFree(p);
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = newHandle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
  *s = newHandle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::free(s);
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) {
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = newHandle<cudaEvent_t>();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::free(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  return cudaSuccess;
}

#endif  // C10D_STUB_CUDART

#ifdef C10D_STUB_NCCL
// ---- NCCL ---------------------------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t) {
  return "host stub";
}
const char* ncclGetLastError(ncclComm_t) {
  return "";
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = newHandle<ncclComm_t>();
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int, ncclUniqueId, int, ncclConfig_t*) {
  *comm = newHandle<ncclComm_t>();
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t* out, ncclConfig_t*) {
  *out = newHandle<ncclComm_t>();
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  std::free(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return ncclCommAbort(comm);
}
ncclResult_t ncclGroupStart() {
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  return ncclSuccess;
}
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t, ncclScalarResidence_t,
                                      ncclComm_t) {
  *op = static_cast<ncclRedOp_t>(ncclNumOps);
  return ncclSuccess;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t) {
  return ncclSuccess;
}

// One rank's results: every collective copies its input to its output.
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return oneRankCopy(send, recv, count, type);
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int,
                           ncclComm_t, cudaStream_t) {
  return oneRankCopy(send, recv, count, type);
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                        ncclRedOp_t, int, ncclComm_t, cudaStream_t) {
  return oneRankCopy(send, recv, count, type);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclComm_t, cudaStream_t) {
  return oneRankCopy(send, recv, count, type);
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t, ncclComm_t, cudaStream_t) {
  return oneRankCopy(send, recv, count, type);
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}

#endif  // C10D_STUB_NCCL

}  // extern "C"
