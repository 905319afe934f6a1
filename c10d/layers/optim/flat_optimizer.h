// FlatOptimizer: SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW over one flat
// fp32 range of parameters, with torch.optim's update rules, element by element.
//
// Why flat: the layers keep optimizer state as contiguous fp32 buffers (one per state slot), so
// that ZeRO can shard it by ranges, gather it for a checkpoint and re-shard it on load. Every mode
// of a training loop (one process, DDP, ZeRO) runs the same per-element arithmetic in the same
// order, so their parameters agree bit for bit given the same gradients.
//
// Update rules (g = gradient, p = parameter, t = steps() after the increment, all in fp32 with
// the hyper-parameters rounded to fp32 once):
//   SGD    g += weightDecay * p;  if momentum: buf = (t == 1) ? g : momentum * buf + (1 -
//          dampening) * g;  g = nesterov ? g + momentum * buf : buf;   p -= lr * g
//   Adam   g += weightDecay * p (L2);  m = beta1 * m + (1 - beta1) * g;
//          v = beta2 * v + (1 - beta2) * g * g;  p -= (lr / (1 - beta1^t)) * m /
//          (sqrt(v) / sqrt(1 - beta2^t) + eps)
//   AdamW  as Adam, but the decay is decoupled: p *= 1 - lr * weightDecay before the update.
// (torch.optim.SGD / Adam / AdamW with foreach=False, maximize=False, amsgrad=False.)
//
// Parameter groups (torch.optim's param_groups): step(params, grads, spans) gives each span of
// elements its own lr and weight decay; the other hyper-parameters are the optimizer's.
//
// State slots, each `numel` floats, zero at construction: SGD with momentum: "momentum_buffer";
// Adam / AdamW: "exp_avg", "exp_avg_sq"; plain SGD: none. Plus one step count for the range.
//
// Threads: not thread-safe; one owner calls step().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/layers/common/memory.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace optim {

enum class Algorithm { kSgd, kAdam, kAdamW };

// "sgd", "adam", "adamw"; parseAlgorithm throws InvalidArgument naming the bad name.
const char* algorithmName(Algorithm a);
Algorithm parseAlgorithm(const std::string& name);

struct OptimizerOptions {
  Algorithm algorithm = Algorithm::kSgd;
  double lr = 0.01;
  // SGD
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  // SGD and Adam: L2 added to the gradient; AdamW: decoupled decay.
  double weightDecay = 0.0;
  // Adam / AdamW
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;

  // Throws InvalidArgument naming the field (torch's checks: lr >= 0, momentum >= 0,
  // weightDecay >= 0, 0 <= beta < 1, eps >= 0, nesterov needs momentum > 0 and dampening 0).
  void validate() const;
  // "adamw(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01)"
  std::string describe() const;
  // Slot names for this algorithm, in slot order.
  std::vector<std::string> slotNames() const;
};

// A parameter group: these parameters (indices into the layer's parameter list) step with their
// own lr and weight decay. A parameter in no group uses the optimizer's.
struct ParamGroup {
  std::vector<size_t> params;
  double lr = 0.01;
  double weightDecay = 0.0;
};
// Throws InvalidArgument naming the group unless every index is < numParams, no parameter is in
// two groups, and lr and weightDecay are finite and >= 0.
void validateGroups(const std::vector<ParamGroup>& groups, size_t numParams);
// A 63-bit fingerprint of the groups (compared across ranks).
int64_t fingerprint(const std::vector<ParamGroup>& groups);

// Elements [begin, end) of a flat range and the lr / weight decay they step with.
struct Span {
  size_t begin = 0;
  size_t end = 0;
  double lr = 0;
  double weightDecay = 0;
};
// Appends [begin, end) with (lr, wd) to spans, merging it into the last span when contiguous and
// equal.
void appendSpan(std::vector<Span>& spans, size_t begin, size_t end, double lr, double wd);

class FlatOptimizer {
 public:
  FlatOptimizer(const OptimizerOptions& options, size_t numel);

  // One step over params[0, numel) with grads[0, numel) (grads are read, never written).
  void step(float* params, const float* grads);
  // The same with per-span lr and weight decay; the spans are disjoint, ascending, within
  // [0, numel); elements in no span step with options().
  void step(float* params, const float* grads, const std::vector<Span>& spans);

  const OptimizerOptions& options() const { return options_; }
  size_t numel() const { return numel_; }
  uint64_t steps() const { return steps_; }
  void setSteps(uint64_t steps) { steps_ = steps; }

  size_t numSlots() const { return slots_.size(); }
  const std::string& slotName(size_t k) const { return names_.at(k); }
  float* slot(size_t k) { return slots_.at(k).data(); }
  const float* slot(size_t k) const { return slots_.at(k).data(); }
  // Bytes of optimizer state held (slots only).
  size_t stateBytes() const { return slots_.size() * numel_ * sizeof(float); }

 private:
  OptimizerOptions options_;
  size_t numel_;
  uint64_t steps_ = 0;
  std::vector<std::string> names_;
  std::vector<layers::Floats> slots_;  // counted (c10d/layers/common/memory.h)

  void update(float* params, const float* grads, size_t begin, size_t end, double lr, double wd);
};

}  // namespace optim
C10D_NAMESPACE_END
}  // namespace c10d
