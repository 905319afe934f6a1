// The "nccl" backend's definition, which the registry (c10d/bootstrap/registry.h) registers on
// first use when the build has NCCL (the list cmake/C10dBackends.cmake generates). It provides the
// CUDA stream hooks the C ABI's c10d_cuda_*_stream call (c10d/core/backend.h).
//
// Priority 5, below every CPU backend (gloo 10, verbs 20): "auto" / defaultBackend() never picks
// nccl while a CPU backend is registered, so CPU tensors never land on it; ask for "nccl" by name
// for CUDA tensors. Its `available` check says "no CUDA device: ..." where CUDA finds no device.
#pragma once

#include "c10d/core/backend.h"

#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

BackendDefinition ncclBackend();

namespace nccl {

// Whether a CUDA device is usable here; otherwise `why` says why ("no CUDA device: ..."). This
// initialises CUDA in the calling process: a process that forks CUDA-using children afterwards
// must ask in a child instead (CUDA does not survive fork()).
bool ncclAvailable(std::string* why);
// "NCCL 2.28.9 (built with CUDA runtime 13000)": the NCCL loaded at run time. Never initialises
// CUDA (safe before fork()).
std::string ncclVersionString();

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
