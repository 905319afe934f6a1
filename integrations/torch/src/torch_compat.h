// What differs between the torch versions the plugin builds against, in one place.
//
// torch 1.13 takes a backend as a c10d::ProcessGroup subclass. torch 2.x splits that class in
// two: ProcessGroup is torch's own front (one per group, dispatching each op by device) and a
// backend is a c10d::Backend registered under it for the devices it serves (CPU here). The op
// methods have the same signatures in both, so the plugin is one class over TorchBackendBase.
// C10D_TORCH_BACKEND_API (set by CMake from the torch it finds) picks the base.
#ifndef C10D_INTEGRATIONS_TORCH_TORCH_COMPAT_H_
#define C10D_INTEGRATIONS_TORCH_TORCH_COMPAT_H_

#if C10D_TORCH_BACKEND_API
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

namespace c10d_torch {

#if C10D_TORCH_BACKEND_API
using TorchBackendBase = ::c10d::Backend;
#else
using TorchBackendBase = ::c10d::ProcessGroup;
#endif

// PREMUL_SUM's factor tensors: torch 1.13 keeps a list (one per device), 2.x one tensor.
inline std::vector<at::Tensor> premulFactorTensors(const ::c10d::NCCLPreMulSumSupplement& s) {
#if C10D_TORCH_BACKEND_API
  if (s.tensor_factor.defined()) {
    return {s.tensor_factor};
  }
  return {};
#else
  return s.tensor_factors;
#endif
}

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_TORCH_COMPAT_H_
