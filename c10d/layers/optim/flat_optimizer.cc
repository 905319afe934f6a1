#include "c10d/layers/optim/flat_optimizer.h"

#include <cmath>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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
  // Each slot filled in place: assign(k, Floats(numel)) would hold a (k + 1)-th copy meanwhile.
  slots_.resize(names_.size());
  for (layers::Floats& slot : slots_) slot.assign(numel_, 0.0f);
}

void FlatOptimizer::step(float* params, const float* grads) {
  step(params, grads, {});
}

void FlatOptimizer::step(float* params, const float* grads, const std::vector<Span>& spans) {
  ++steps_;
  size_t at = 0;
  for (const Span& s : spans) {
    C10D_CHECK(s.begin >= at && s.end >= s.begin && s.end <= numel_, "FlatOptimizer::step: span [",
               s.begin, ", ", s.end, ") is not ascending within [0, ", numel_, ")");
    if (s.begin > at) update(params, grads, at, s.begin, options_.lr, options_.weightDecay);
    update(params, grads, s.begin, s.end, s.lr, s.weightDecay);
    at = s.end;
  }
  if (at < numel_) update(params, grads, at, numel_, options_.lr, options_.weightDecay);
}

void FlatOptimizer::update(float* params, const float* grads, size_t begin, size_t end, double lrIn,
                           double wdIn) {
  const auto& o = options_;
  const float lr = static_cast<float>(lrIn);
  const float wd = static_cast<float>(wdIn);
  if (o.algorithm == Algorithm::kSgd) {
    const float momentum = static_cast<float>(o.momentum);
    const float keep = static_cast<float>(1.0 - o.dampening);
    float* buf = slots_.empty() ? nullptr : slots_[0].data();
    const bool first = steps_ == 1;
    for (size_t i = begin; i < end; ++i) {
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
  const float stepSize = static_cast<float>(lrIn / (1.0 - std::pow(o.beta1, t)));
  const float bc2Sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, t)));
  const float eps = static_cast<float>(o.eps);
  const bool decoupled = o.algorithm == Algorithm::kAdamW;
  const float decay = static_cast<float>(1.0 - lrIn * wdIn);
  float* m = slots_[0].data();
  float* v = slots_[1].data();
  for (size_t i = begin; i < end; ++i) {
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

void validateGroups(const std::vector<ParamGroup>& groups, size_t numParams) {
  std::vector<size_t> groupOf(numParams, groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    const ParamGroup& g = groups[k];
    C10D_CHECK_ARG(std::isfinite(g.lr) && g.lr >= 0, "parameter group ", k,
                   ": lr must be finite and >= 0 (got ", g.lr, ")");
    C10D_CHECK_ARG(std::isfinite(g.weightDecay) && g.weightDecay >= 0, "parameter group ", k,
                   ": weightDecay must be finite and >= 0 (got ", g.weightDecay, ")");
    for (size_t p : g.params) {
      C10D_CHECK_ARG(p < numParams, "parameter group ", k, " names parameter ", p,
                     ", but there are ", numParams, " parameters");
      C10D_CHECK_ARG(groupOf[p] == groups.size(), "parameter ", p, " is in parameter groups ",
                     groupOf[p], " and ", k, " (a parameter belongs to one group at most)");
      groupOf[p] = k;
    }
  }
}

int64_t fingerprint(const std::vector<ParamGroup>& groups) {
  Fnv1a h(kFnv1aShortBasis);
  for (const ParamGroup& g : groups) {
    const size_t n = g.params.size();
    h.add(&n, sizeof(n));
    for (size_t p : g.params) h.add(&p, sizeof(p));
    h.add(&g.lr, sizeof(g.lr));
    h.add(&g.weightDecay, sizeof(g.weightDecay));
  }
  return static_cast<int64_t>(h.value() >> 1);
}

void appendSpan(std::vector<Span>& spans, size_t begin, size_t end, double lr, double wd) {
  if (end <= begin) return;
  if (!spans.empty() && spans.back().end == begin && spans.back().lr == lr &&
      spans.back().weightDecay == wd) {
    spans.back().end = end;
    return;
  }
  spans.push_back(Span{begin, end, lr, wd});
}

}  // namespace optim
C10D_NAMESPACE_END
}  // namespace c10d
