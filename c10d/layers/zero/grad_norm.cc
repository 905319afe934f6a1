#include "c10d/layers/zero/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

void validate(const GradClip& clip, const char* who) {
  C10D_CHECK_ARG(std::isfinite(clip.maxNorm) && clip.maxNorm >= 0, who,
                 ": maxGradNorm must be finite and >= 0 (got ", clip.maxNorm, ")");
  C10D_CHECK_ARG(clip.normType > 0 && !std::isnan(clip.normType), who,
                 ": gradNormType must be > 0 or infinity (got ", clip.normType, ")");
}

float clipCoefficient(double norm, double maxNorm) {
  const float denominator = static_cast<float>(norm) + 1e-6f;
  const float coef = (1.0f / denominator) * static_cast<float>(maxNorm);
  return coef < 1.0f || std::isnan(coef) ? coef : 1.0f;  // torch.clamp(max=1) keeps NaN
}

double clipGradNorm(ProcessGroup& group, float* grads, size_t n, const GradClip& clip,
                    Milliseconds timeout) {
  const bool inf = std::isinf(clip.normType);
  const double p = clip.normType;
  auto local = std::make_shared<double>(0.0);
  for (size_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(grads[i]));
    if (inf) {
      *local = std::max(*local, a);
    } else {
      *local += p == 2.0 ? a * a : std::pow(a, p);
    }
  }
  auto work = group.allreduce(tensorOf(local.get(), 1),
                              AllreduceOptions{inf ? ReduceOp::MAX : ReduceOp::SUM, timeout});
  work->then([local](Work&) {});  // alive until the op completes, even if we time out
  work->wait(timeout);
  const double norm = inf ? *local : (p == 2.0 ? std::sqrt(*local) : std::pow(*local, 1.0 / p));
  const float coef = clipCoefficient(norm, clip.maxNorm);
  if (coef != 1.0f) {
    for (size_t i = 0; i < n; ++i) grads[i] *= coef;
  }
  return norm;
}

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
