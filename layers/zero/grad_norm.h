// Gradient clipping over shards (fairscale's OSS.clip_grad_norm, torch FSDP's clip_grad_norm_):
// the total norm of a gradient every rank holds a disjoint part of, and every part scaled by the
// same factor when it is above the limit.
#pragma once

#include <cstddef>

#include "core/process_group.h"

namespace c10d {
namespace zero {

struct GradClip {
  double maxNorm = 0;     // 0: no clipping (and no norm computed)
  double normType = 2.0;  // p > 0, or INFINITY (the largest |g|)
};
// InvalidArgument naming the field unless maxNorm is finite and >= 0 and normType is > 0 (finite
// or infinite).
void validate(const GradClip& clip, const char* who);

// Collective: the p-norm of the whole gradient (grads[0, n) on each rank: disjoint parts of it),
// accumulated in double on each rank and combined with one allreduce (SUM of |g|^p, or MAX).
// If it exceeds clip.maxNorm, each rank's part is multiplied by the fp32 rounding of
// maxNorm / (norm + 1e-6), torch's clip_coef. Returns the norm before clipping. The same on every
// rank; equal to torch's when the per-parameter norms are exact (torch accumulates them in fp32).
double clipGradNorm(ProcessGroup& group, float* grads, size_t n, const GradClip& clip,
                    Milliseconds timeout);

}  // namespace zero
}  // namespace c10d
