// The caller's "current stream" per CUDA device, as the nccl backend sees it.
//
// The nccl backend runs every op on its own stream per (group, device) and orders it after the
// caller's current stream with a CUDA event; Work::synchronize() makes the current stream wait for
// the op. Without PyTorch there is no framework-wide notion of a current stream, so this header
// provides one: a thread-local stream per device, default nullptr (CUDA's legacy default stream,
// which exists on every device). Set it around your own kernels' stream:
//
//   c10d::nccl::CurrentStreamGuard g(/*device=*/0, myStream);
//   pg->allreduce(t);        // waits for work queued on myStream so far
//   work->synchronize();     // kernels queued on myStream afterwards wait for the allreduce
//
// Thread-local: each thread has its own current streams; nothing here blocks or starts threads.
// Header-only CUDA types are forward-declared, so including this does not need the CUDA headers.
#pragma once
#include "c10d/base/abi.h"

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;  // NOLINT: identical to CUDA's own typedef

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

// The current stream of `device` for this thread (nullptr = the legacy default stream).
cudaStream_t currentStream(int device);
// Sets it; nullptr restores the default.
void setCurrentStream(int device, cudaStream_t stream);

// Sets the current stream of `device` for the guard's lifetime, then restores the previous one.
class CurrentStreamGuard {
 public:
  CurrentStreamGuard(int device, cudaStream_t stream)
      : device_(device), previous_(currentStream(device)) {
    setCurrentStream(device, stream);
  }
  ~CurrentStreamGuard() { setCurrentStream(device_, previous_); }
  CurrentStreamGuard(const CurrentStreamGuard&) = delete;
  CurrentStreamGuard& operator=(const CurrentStreamGuard&) = delete;

 private:
  const int device_;
  const cudaStream_t previous_;
};

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
