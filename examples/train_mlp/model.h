// Mlp: the example's model, a fully connected network with ReLU between layers and a softmax
// cross-entropy loss, written out by hand (forward and backward) over fp32 host memory.
//
//   widths w_0 (input) -> w_1 -> ... -> w_L (classes); layer l: z = a W_l^T + b_l with W_l of
//   shape [w_{l+1}, w_l] (torch's nn.Linear layout, row-major), ReLU after every layer but the
//   last; loss = mean over the batch of -log softmax(z)_label.
//
// With batchNorm (--sync-bn) the first hidden layer is z = BN(a W_0^T + b_0) before its ReLU, a
// norm::SyncBatchNorm over the whole data-parallel batch (attachGroup(); alone: plain batch norm),
// with parameters bn0.weight / bn0.bias right after fc0's; evaluate() uses its running statistics.
//
// Parameters and gradients live in two flat fp32 arrays, parameter by parameter in the order
// fc0.weight, fc0.bias, [bn0.weight, bn0.bias,] fc1.weight, ..., so that one FlatOptimizer can
// step them all at once and a checkpoint is one array.
//
// backward() computes the layers' gradients last layer first and reports each parameter the moment
// its gradient is final (bias, then weight: reverse parameter order, the order the DDP Reducer
// buckets in), before it computes the gradient flowing into the layer below: a data-parallel
// caller starts reducing those gradients while the rest of backward runs.
//
// Layer storage (ZeRO-3): with setLayerStorage(s), the parameters (and gradients) of layer l live
// wherever s binds them for the duration of the layer's pass: s->enter(l, backward) before the
// layer's forward or backward binds its parameters with bind(), s->leave(l, backward) follows
// (in backward, once the layer's gradients are complete and its weight no longer read). Layer 0
// holds bn0's parameters with fc0's. A model built without arrays (Arrays::kNone, ZeRO-3) has none
// of its own: the storage holds every layer, and checksum() and parameters() are not available.
// One built with its parameter array alone (Arrays::kParams, ZeRO-2) never has a gradient array:
// the storage binds each layer's gradients in backward (bind(p, params() + offset(p), grad)), and
// parameters() gives no grad tensors.
//
// Arithmetic: every sum runs in a fixed order (over the batch, then over input features), so the
// same inputs give the same bits on every rank and every run; the loss is accumulated in double.
// Threads: none; not thread-safe. Memory: parameters + gradients (2 x numel floats; numel with
// kParams, none with kNone) and the activations of the last forward (batch x sum of widths floats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/parameter.h"
#include "c10d/layers/norm/sync_batch_norm.h"
#include "examples/train_mlp/random.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

struct MlpShape {
  size_t inputDim = 32;
  // The default: 32-2048-2048-2048-2048-10, 12.7M parameters (50 MB of fp32 gradients: several
  // of the Reducer's default 25 MiB buckets). The tests pass --hidden 128 --layers 3 (22k).
  size_t hidden = 2048;
  size_t layers = 5;  // linear layers (>= 1); layers - 1 hidden layers of `hidden` units
  size_t classes = 10;
  bool batchNorm = false;  // SyncBatchNorm after the first linear layer (needs layers >= 2)

  std::vector<size_t> widths() const;  // {inputDim, hidden, ..., hidden, classes}
  std::string describe() const;        // "32-128-128-10", "32-128(bn)-128-10"
  // InvalidArgument naming the field unless every size is >= 1 (classes >= 2).
  void validate() const;
};

class Mlp {
 public:
  class LayerStorage {
   public:
    virtual ~LayerStorage() = default;
    virtual void enter(size_t layer, bool backward) = 0;
    virtual void leave(size_t layer, bool backward) = 0;
  };

  // Which flat arrays the model owns. kNone: a LayerStorage must hold the layers (ZeRO-3), the
  // initial values made layer by layer by an Initializer. kParams: the parameters only, a
  // LayerStorage binds the gradients (ZeRO-2).
  enum class Arrays { kParamsAndGrads, kParams, kNone };
  explicit Mlp(MlpShape shape, Arrays arrays = Arrays::kParamsAndGrads);

  // torch's nn.Linear default: weight and bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn
  // from `seed` (the same values on every rank and every run).
  void initialize(uint64_t seed);
  // initialize()'s values one layer at a time, into views of layer l's parameters (in
  // layerParameters(l)'s order): fill(0), fill(1), ... in order give the same values.
  class Initializer {
   public:
    Initializer(const Mlp& model, uint64_t seed);
    void fill(size_t layer, const std::vector<float*>& params);

   private:
    const Mlp& model_;
    Rng rng_;
    size_t next_ = 0;
  };

  // The group the batch norm's statistics span (collective forward and backward from then on);
  // without one it normalizes over this process's batch. No-op without batchNorm.
  void attachGroup(std::shared_ptr<ProcessGroup> group);

  // Mean cross-entropy of the batch (x: n rows of inputDim floats, labels in [0, classes)); keeps
  // the activations for backward().
  double forward(const float* x, const int32_t* labels, size_t n);
  // Gradients of the last forward()'s mean loss into grads(); calls onReady(p) as soon as
  // parameter p's gradient is complete, in reverse parameter order.
  void backward(const std::function<void(size_t)>& onReady);
  // Mean cross-entropy over n samples, evaluated in chunks (activations of the chunk only).
  double evaluate(const float* x, const int32_t* labels, size_t n);

  const MlpShape& shape() const { return shape_; }
  size_t numParameters() const { return names_.size(); }
  size_t numel() const { return total_; }
  const std::string& name(size_t p) const { return names_.at(p); }
  size_t offset(size_t p) const { return offsets_.at(p); }
  std::vector<size_t> numels() const { return numels_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads() { return grads_.data(); }
  // Replaces every parameter (numel() floats, in parameter order).
  void setParams(const std::vector<float>& values);
  // FNV-1a 64 of the parameters' bytes: equal on two ranks or runs iff the models are bit-identical
  // (up to hash collisions).
  uint64_t checksum() const;
  // Views of every parameter (data, and grad unless the model has no gradient array: Tensor())
  // for the Reducer / ShardedOptimizer.
  std::vector<layers::Parameter> parameters();

  size_t numLayers() const { return widths_.size() - 1; }
  // Layer l's parameters, in parameter order (fc<l>.weight, fc<l>.bias[, bn0.weight, bn0.bias]).
  std::vector<size_t> layerParameters(size_t layer) const;
  void setLayerStorage(LayerStorage* storage);
  // From LayerStorage::enter: parameter p's values (and gradient, in backward) are at these.
  void bind(size_t p, float* data, float* grad);

  // Each layer's compute in the passes since the last take (--trace): FlightRecorder::nowNs, not
  // counting what a LayerStorage does before and after.
  struct LayerSpan {
    size_t layer = 0;
    bool backward = false;
    int64_t beginNs = 0;
    int64_t endNs = 0;
  };
  void recordTimings(bool on) { recordTimings_ = on; }
  std::vector<LayerSpan> takeTimings() { return std::move(timings_); }

 private:
  float* weight(size_t l) { return data_[weightParam_[l]]; }
  float* bias(size_t l) { return data_[weightParam_[l] + 1]; }
  float* weightGrad(size_t l) { return grad_[weightParam_[l]]; }
  float* biasGrad(size_t l) { return grad_[weightParam_[l] + 1]; }
  void bindOwnArrays();
  void enter(size_t l, bool backward);
  void leave(size_t l, bool backward);
  // Forward of rows [0, n) of x through every layer into acts_; returns the summed loss.
  double forwardRows(const float* x, const int32_t* labels, size_t n, bool training);
  // Layer 0's pre-activation z (n x hidden) through the batch norm, in place.
  void batchNormForward(std::vector<float>& z, size_t n, bool training);
  // delta_ (dLoss/d BN output) -> dLoss/dz of layer 0, and bn0's gradients (reported).
  void batchNormBackward(size_t n, const std::function<void(size_t)>& onReady);

  MlpShape shape_;
  std::vector<size_t> widths_;
  std::vector<std::string> names_;
  std::vector<size_t> offsets_;
  std::vector<size_t> numels_;
  size_t total_ = 0;  // parameter elements
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<float*> data_;  // per parameter: where its values are now
  std::vector<float*> grad_;  // per parameter: where its gradient goes now
  LayerStorage* storage_ = nullptr;
  bool recordTimings_ = false;
  std::vector<LayerSpan> timings_;
  std::vector<size_t> weightParam_;  // layer l's weight parameter (its bias follows)
  size_t bnParam_ = 0;               // bn0.weight's parameter index (bn0.bias follows)
  std::unique_ptr<norm::SyncBatchNorm> bn_;
  std::vector<float> bnInput_;  // layer 0's z before the batch norm (its backward reads it)

  // Last forward: acts_[0] = the input, acts_[l] = layer l's input (post-ReLU), acts_[L] = logits.
  size_t batch_ = 0;
  std::vector<std::vector<float>> acts_;
  std::vector<int32_t> labels_;
  std::vector<float> transposed_;  // a block of a weight's rows as [in, block] (forwardRows)
  std::vector<float> delta_;       // dLoss/dz of the layer being differentiated
  std::vector<float> deltaBelow_;  // dLoss/da of the layer below
};

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
