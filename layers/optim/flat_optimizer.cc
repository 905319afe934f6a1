#include "layers/optim/flat_optimizer.h"

#include <cmath>
#include <sstream>

#include "base/error.h"

namespace c10d {
namespace optim {

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kSgd:
      return "sgd";
    case Algorithm::kAdam:
      return "adam";
    case Algorithm::kAdamW:
      return "adamw";
  }
  return "?";
}

Algorithm parseAlgorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::kSgd, Algorithm::kAdam, Algorithm::kAdamW}) {
    if (name == algorithmName(a)) return a;
  }
  C10D_THROW(InvalidArgument, "unknown optimizer '", name, "' (expected sgd, adam or adamw)");
}

void OptimizerOptions::validate() const {
  C10D_CHECK_ARG(std::isfinite(lr) && lr >= 0, "optimizer lr must be finite and >= 0 (got ", lr,
                 ")");
  C10D_CHECK_ARG(std::isfinite(weightDecay) && weightDecay >= 0,
                 "optimizer weightDecay must be finite and >= 0 (got ", weightDecay, ")");
  if (algorithm == Algorithm::kSgd) {
    C10D_CHECK_ARG(std::isfinite(momentum) && momentum >= 0,
                   "SGD momentum must be finite and >= 0 (got ", momentum, ")");
    C10D_CHECK_ARG(std::isfinite(dampening), "SGD dampening must be finite (got ", dampening, ")");
    C10D_CHECK_ARG(!nesterov || (momentum > 0 && dampening == 0),
                   "SGD nesterov needs momentum > 0 and dampening 0 (got momentum ", momentum,
                   ", dampening ", dampening, ")");
  } else {
    C10D_CHECK_ARG(beta1 >= 0 && beta1 < 1, "Adam beta1 must be in [0, 1) (got ", beta1, ")");
    C10D_CHECK_ARG(beta2 >= 0 && beta2 < 1, "Adam beta2 must be in [0, 1) (got ", beta2, ")");
    C10D_CHECK_ARG(std::isfinite(eps) && eps >= 0, "Adam eps must be finite and >= 0 (got ", eps,
                   ")");
  }
}

std::string OptimizerOptions::describe() const {
  std::ostringstream os;
  os << algorithmName(algorithm) << "(lr=" << lr;
  if (algorithm == Algorithm::kSgd) {
    os << ", momentum=" << momentum << ", dampening=" << dampening
       << ", nesterov=" << (nesterov ? "true" : "false");
  } else {
    os << ", betas=(" << beta1 << ", " << beta2 << "), eps=" << eps;
  }
  os << ", weight_decay=" << weightDecay << ")";
  return os.str();
}

std::vector<std::string> OptimizerOptions::slotNames() const {
  if (algorithm == Algorithm::kSgd) {
    if (momentum != 0) return {"momentum_buffer"};
    return {};
  }
  return {"exp_avg", "exp_avg_sq"};
}

FlatOptimizer::FlatOptimizer(const OptimizerOptions& options, size_t numel)
    : options_(options), numel_(numel) {
  options_.validate();
  names_ = options_.slotNames();
  slots_.assign(names_.size(), layers::Floats(numel_, 0.0f));
}

void FlatOptimizer::step(float* params, const float* grads) {
  ++steps_;
  const size_t n = numel_;
  const auto& o = options_;
  const float lr = static_cast<float>(o.lr);
  const float wd = static_cast<float>(o.weightDecay);
  if (o.algorithm == Algorithm::kSgd) {
    const float momentum = static_cast<float>(o.momentum);
    const float keep = static_cast<float>(1.0 - o.dampening);
    float* buf = slots_.empty() ? nullptr : slots_[0].data();
    const bool first = steps_ == 1;
    for (size_t i = 0; i < n; ++i) {
      float g = grads[i];
      if (wd != 0) g += wd * params[i];
      if (buf != nullptr) {
        buf[i] = first ? g : momentum * buf[i] + keep * g;
        g = o.nesterov ? g + momentum * buf[i] : buf[i];
      }
      params[i] -= lr * g;
    }
    return;
  }
  const double t = static_cast<double>(steps_);
  const float beta1 = static_cast<float>(o.beta1);
  const float beta2 = static_cast<float>(o.beta2);
  const float oneMinusBeta1 = static_cast<float>(1.0 - o.beta1);
  const float oneMinusBeta2 = static_cast<float>(1.0 - o.beta2);
  const float stepSize = static_cast<float>(o.lr / (1.0 - std::pow(o.beta1, t)));
  const float bc2Sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, t)));
  const float eps = static_cast<float>(o.eps);
  const bool decoupled = o.algorithm == Algorithm::kAdamW;
  const float decay = static_cast<float>(1.0 - o.lr * o.weightDecay);
  float* m = slots_[0].data();
  float* v = slots_[1].data();
  for (size_t i = 0; i < n; ++i) {
    float g = grads[i];
    if (decoupled) {
      if (wd != 0) params[i] *= decay;
    } else if (wd != 0) {
      g += wd * params[i];
    }
    m[i] = beta1 * m[i] + oneMinusBeta1 * g;
    v[i] = beta2 * v[i] + oneMinusBeta2 * g * g;
    const float denom = std::sqrt(v[i]) / bc2Sqrt + eps;
    params[i] -= stepSize * m[i] / denom;
  }
}

}  // namespace optim
}  // namespace c10d
