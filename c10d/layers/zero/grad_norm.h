// Gradient clipping over shards (fairscale's OSS.clip_grad_norm, torch FSDP's clip_grad_norm_):
// the total norm of a gradient every rank holds a disjoint part of, and every part scaled by the
// same factor when it is above the limit.
#pragma once

#include <cstddef>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

struct GradClip {
  double maxNorm = 0;     // 0: no clipping (and no norm computed)
  double normType = 2.0;  // p > 0, or INFINITY (the largest |g|)
};
// InvalidArgument naming the field unless maxNorm is finite and >= 0 and normType is > 0 (finite
// or infinite).
void validate(const GradClip& clip, const char* who);

// torch.nn.utils.clip_grad_norm_'s clip_coef for fp32 gradients, clamped to 1: max_norm /
// (total_norm + 1e-6) as torch evaluates it (1.13 and 2.x): total_norm is an fp32 tensor, 1e-6 is
// added in fp32, and a Python number divided by a tensor is Tensor.__rtruediv__, i.e.
// reciprocal() * max_norm, two fp32 roundings. (One division, or the quotient in double rounded
// once, differs from torch in the last bit for a quarter to a third of the norms.) NaN stays NaN.
float clipCoefficient(double norm, double maxNorm);

// Collective: the p-norm of the whole gradient (grads[0, n) on each rank: disjoint parts of it),
// accumulated in double on each rank and combined with one allreduce (SUM of |g|^p, or MAX).
// Each rank's part is then multiplied by clipCoefficient(norm, clip.maxNorm) unless that is 1.
// Returns the norm before clipping, in double (torch's is that norm's fp32 rounding when its
// per-parameter fp32 norms are exact). The same on every rank.
double clipGradNorm(ProcessGroup& group, float* grads, size_t n, const GradClip& clip,
                    Milliseconds timeout);

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
