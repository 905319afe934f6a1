#include "examples/train_mlp/model.h"

#include <algorithm>
#include <cmath>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/core/flight_recorder.h"
#include "examples/train_mlp/random.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

std::vector<size_t> MlpShape::widths() const {
  std::vector<size_t> w{inputDim};
  for (size_t l = 0; l + 1 < layers; ++l) w.push_back(hidden);
  w.push_back(classes);
  return w;
}

std::string MlpShape::describe() const {
  std::string s;
  size_t i = 0;
  for (size_t w : widths()) {
    s += (s.empty() ? "" : "-") + std::to_string(w);
    if (batchNorm && i++ == 1) s += "(bn)";
  }
  return s;
}

void MlpShape::validate() const {
  C10D_CHECK_ARG(inputDim >= 1, "model input width must be >= 1 (got ", inputDim, ")");
  C10D_CHECK_ARG(hidden >= 1, "--hidden must be >= 1 (got ", hidden, ")");
  C10D_CHECK_ARG(layers >= 1, "--layers must be >= 1 linear layer (got ", layers, ")");
  C10D_CHECK_ARG(classes >= 2, "--classes must be >= 2 (got ", classes, ")");
  C10D_CHECK_ARG(!batchNorm || layers >= 2,
                 "--sync-bn normalizes the first hidden layer: it needs --layers >= 2 (got ",
                 layers, ")");
}

Mlp::Mlp(MlpShape shape, Arrays arrays) : shape_(shape) {
  shape_.validate();
  widths_ = shape_.widths();
  size_t total = 0;
  auto add = [&](const std::string& name, size_t n) {
    names_.push_back(name);
    offsets_.push_back(total);
    numels_.push_back(n);
    total += n;
  };
  for (size_t l = 0; l < numLayers(); ++l) {
    const size_t in = widths_[l];
    const size_t out = widths_[l + 1];
    weightParam_.push_back(names_.size());
    add("fc" + std::to_string(l) + ".weight", out * in);
    add("fc" + std::to_string(l) + ".bias", out);
    if (l == 0 && shape_.batchNorm) {
      bnParam_ = names_.size();
      add("bn0.weight", out);
      add("bn0.bias", out);
      bn_ = std::make_unique<norm::SyncBatchNorm>(nullptr, out);
    }
  }
  total_ = total;
  if (arrays != Arrays::kNone) params_.assign(total, 0.0f);
  if (arrays == Arrays::kParamsAndGrads) grads_.assign(total, 0.0f);
  bindOwnArrays();
  acts_.resize(widths_.size());
}

void Mlp::bindOwnArrays() {
  data_.assign(names_.size(), nullptr);
  grad_.assign(names_.size(), nullptr);
  if (params_.empty()) return;  // released: the storage binds each layer
  for (size_t p = 0; p < names_.size(); ++p) {
    data_[p] = params_.data() + offsets_[p];
    if (!grads_.empty()) grad_[p] = grads_.data() + offsets_[p];
  }
}

std::vector<size_t> Mlp::layerParameters(size_t layer) const {
  C10D_CHECK_ARG(layer < numLayers(), "Mlp::layerParameters: layer ", layer, " of ", numLayers());
  std::vector<size_t> out{weightParam_[layer], weightParam_[layer] + 1};
  if (layer == 0 && bn_) out.insert(out.end(), {bnParam_, bnParam_ + 1});
  return out;
}

void Mlp::enter(size_t l, bool backward) {
  if (storage_) storage_->enter(l, backward);
  if (recordTimings_) timings_.push_back({l, backward, FlightRecorder::nowNs(), 0});
}

void Mlp::leave(size_t l, bool backward) {
  if (recordTimings_ && !timings_.empty()) timings_.back().endNs = FlightRecorder::nowNs();
  if (storage_) storage_->leave(l, backward);
}

void Mlp::setLayerStorage(LayerStorage* storage) {
  storage_ = storage;
  bindOwnArrays();
}

void Mlp::bind(size_t p, float* data, float* grad) {
  data_.at(p) = data;
  grad_.at(p) = grad;
}

void Mlp::attachGroup(std::shared_ptr<ProcessGroup> group) {
  if (!bn_) return;
  bn_ = std::make_unique<norm::SyncBatchNorm>(std::move(group), widths_[1], bn_->options());
}

Mlp::Initializer::Initializer(const Mlp& model, uint64_t seed)
    : model_(model), rng_(Rng::forStream(seed, kInitStream)) {}

void Mlp::Initializer::fill(size_t layer, const std::vector<float*>& params) {
  C10D_CHECK_ARG(layer == next_, "Mlp::Initializer: layer ", layer, " filled before layer ", next_,
                 " (the draws run in layer order)");
  const std::vector<size_t> ps = model_.layerParameters(layer);
  C10D_CHECK_ARG(params.size() == ps.size(), "Mlp::Initializer: ", params.size(),
                 " views for layer ", layer, "'s ", ps.size(), " parameters");
  const double bound = 1.0 / std::sqrt(static_cast<double>(model_.widths_[layer]));
  for (size_t i = 0; i < 2; ++i) {  // weight, bias
    float* v = params[i];
    for (size_t j = 0; j < model_.numels_[ps[i]]; ++j) {
      v[j] = static_cast<float>(rng_.uniform(-bound, bound));
    }
  }
  if (ps.size() > 2) {  // bn0, as torch's BatchNorm: weight 1, bias 0
    std::fill_n(params[2], model_.numels_[ps[2]], 1.0f);
    std::fill_n(params[3], model_.numels_[ps[3]], 0.0f);
  }
  ++next_;
}

void Mlp::initialize(uint64_t seed) {
  C10D_CHECK(!params_.empty(), "Mlp::initialize: the model holds no arrays (use an Initializer)");
  Initializer init(*this, seed);
  for (size_t l = 0; l < numLayers(); ++l) {
    std::vector<float*> views;
    for (size_t p : layerParameters(l)) views.push_back(params_.data() + offsets_[p]);
    init.fill(l, views);
  }
}

uint64_t Mlp::checksum() const {
  C10D_CHECK(params_.size() == total_, "Mlp::checksum: the model holds no arrays (ZeRO-3)");
  return fnv1a(params_.data(), params_.size() * sizeof(float));
}

void Mlp::setParams(const std::vector<float>& values) {
  C10D_CHECK_ARG(values.size() == params_.size(), "Mlp::setParams: ", values.size(),
                 " values for a model of ", params_.size(), " parameters");
  std::copy(values.begin(), values.end(), params_.begin());  // in place: views stay valid
}

std::vector<layers::Parameter> Mlp::parameters() {
  C10D_CHECK(params_.size() == total_, "Mlp::parameters: the model holds no arrays (ZeRO-3)");
  std::vector<layers::Parameter> out;
  for (size_t p = 0; p < numParameters(); ++p) {
    out.push_back({names_[p], tensorOf(params_.data() + offsets_[p], numels_[p]),
                   grads_.empty() ? Tensor() : tensorOf(grads_.data() + offsets_[p], numels_[p])});
  }
  return out;
}

void Mlp::batchNormForward(std::vector<float>& z, size_t n, bool training) {
  const size_t c = widths_[1];
  // The layer's weight and bias are the model's (the optimizer steps them in params_).
  std::copy_n(data_[bnParam_], c, static_cast<float*>(bn_->weight().data));
  std::copy_n(data_[bnParam_ + 1], c, static_cast<float*>(bn_->bias().data));
  bn_->setTraining(training);
  bnInput_ = z;
  bn_->forward(tensorOf(bnInput_.data(), bnInput_.size()), n, tensorOf(z.data(), z.size()));
}

void Mlp::batchNormBackward(size_t n, const std::function<void(size_t)>& onReady) {
  const size_t c = widths_[1];
  bn_->zeroGrad();
  Tensor d = tensorOf(delta_.data(), n * c);
  bn_->backward(d, d);
  std::copy_n(static_cast<const float*>(bn_->biasGrad().data), c, grad_[bnParam_ + 1]);
  onReady(bnParam_ + 1);
  std::copy_n(static_cast<const float*>(bn_->weightGrad().data), c, grad_[bnParam_]);
  onReady(bnParam_);
}

double Mlp::forwardRows(const float* x, const int32_t* labels, size_t n, bool training) {
  acts_[0].assign(x, x + n * widths_[0]);
  for (size_t l = 0; l < numLayers(); ++l) {
    const size_t in = widths_[l];
    const size_t out = widths_[l + 1];
    enter(l, false);
    // W is [out, in]; a transposed block of its rows lets the inner loop run over contiguous
    // outputs (an axpy the compiler vectorizes) while each output still sums its inputs in index
    // order. Blocks of kBlock outputs: the scratch is kBlock rows, not a copy of the layer.
    constexpr size_t kBlock = 128;
    const float* w = weight(l);
    const float* b = bias(l);
    const float* a = acts_[l].data();
    std::vector<float>& z = acts_[l + 1];
    z.resize(n * out);
    for (size_t i = 0; i < n; ++i) std::copy(b, b + out, z.data() + i * out);
    transposed_.resize(in * std::min(kBlock, out));
    for (size_t o0 = 0; o0 < out; o0 += kBlock) {
      const size_t width = std::min(kBlock, out - o0);
      for (size_t o = 0; o < width; ++o) {
        for (size_t k = 0; k < in; ++k) transposed_[k * width + o] = w[(o0 + o) * in + k];
      }
      // k outermost: one row of the transposed block stays in cache while every sample uses it
      // (the order of each output's sum, k ascending, is the same in any loop order).
      for (size_t k = 0; k < in; ++k) {
        const float* __restrict wt = transposed_.data() + k * width;
        for (size_t i = 0; i < n; ++i) {
          const float ak = a[i * in + k];
          float* __restrict zi = z.data() + i * out + o0;
          for (size_t o = 0; o < width; ++o) zi[o] += ak * wt[o];
        }
      }
    }
    if (l == 0 && bn_) batchNormForward(z, n, training);
    leave(l, false);
    if (l + 1 < numLayers()) {
      for (float& v : z) v = v > 0.0f ? v : 0.0f;
    }
  }
  const size_t classes = widths_.back();
  const std::vector<float>& logits = acts_.back();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t y = labels[i];
    C10D_CHECK_ARG(y >= 0 && static_cast<size_t>(y) < classes, "label ", y, " of sample ", i,
                   " is outside [0, ", classes, ")");
    const float* zi = logits.data() + i * classes;
    const double m = *std::max_element(zi, zi + classes);
    double s = 0;
    for (size_t c = 0; c < classes; ++c) s += std::exp(zi[c] - m);
    sum += std::log(s) + m - zi[y];
  }
  return sum;
}

double Mlp::forward(const float* x, const int32_t* labels, size_t n) {
  C10D_CHECK_ARG(n > 0, "Mlp::forward: empty batch");
  const double sum = forwardRows(x, labels, n, true);
  batch_ = n;
  labels_.assign(labels, labels + n);
  return sum / static_cast<double>(n);
}

double Mlp::evaluate(const float* x, const int32_t* labels, size_t n) {
  C10D_CHECK_ARG(n > 0, "Mlp::evaluate: no samples");
  constexpr size_t kChunk = 256;
  double sum = 0;
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t rows = std::min(kChunk, n - i);
    sum += forwardRows(x + i * widths_[0], labels + i, rows, false);
  }
  batch_ = 0;  // the activations are the last chunk's, not a batch to differentiate
  return sum / static_cast<double>(n);
}

void Mlp::backward(const std::function<void(size_t)>& onReady) {
  C10D_CHECK(batch_ > 0, "Mlp::backward needs a forward() first");
  const size_t n = batch_;
  const size_t classes = widths_.back();
  // dLoss/dlogits = (softmax - onehot) / n, computed in double, rounded once.
  delta_.resize(n * classes);
  const float* logits = acts_.back().data();
  for (size_t i = 0; i < n; ++i) {
    const float* zi = logits + i * classes;
    const double m = *std::max_element(zi, zi + classes);
    double s = 0;
    for (size_t c = 0; c < classes; ++c) s += std::exp(zi[c] - m);
    for (size_t c = 0; c < classes; ++c) {
      const double p = std::exp(zi[c] - m) / s;
      const double onehot = static_cast<int32_t>(c) == labels_[i] ? 1.0 : 0.0;
      delta_[i * classes + c] = static_cast<float>((p - onehot) / static_cast<double>(n));
    }
  }
  bool entered = false;  // layer l's storage entered already (layer 0: by bn0's backward)
  for (size_t l = numLayers(); l-- > 0;) {
    const size_t in = widths_[l];
    const size_t out = widths_[l + 1];
    if (!entered) enter(l, true);
    entered = false;
    const float* a = acts_[l].data();
    const float* d = delta_.data();
    float* __restrict gb = biasGrad(l);
    std::fill(gb, gb + out, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      for (size_t o = 0; o < out; ++o) gb[o] += d[i * out + o];
    }
    onReady(weightParam_[l] + 1);
    float* gw = weightGrad(l);
    for (size_t o = 0; o < out; ++o) {
      float* __restrict row = gw + o * in;
      std::fill(row, row + in, 0.0f);
      for (size_t i = 0; i < n; ++i) {
        const float dio = d[i * out + o];
        const float* __restrict ai = a + i * in;
        for (size_t k = 0; k < in; ++k) row[k] += dio * ai[k];
      }
    }
    onReady(weightParam_[l]);
    if (l == 0) {
      leave(0, true);
      break;
    }
    // The gradient flowing into layer l's input, through the ReLU that produced it: this is the
    // compute a data-parallel caller overlaps with the reduction of the gradients just reported.
    const float* w = weight(l);
    deltaBelow_.assign(n * in, 0.0f);
    for (size_t o = 0; o < out; ++o) {  // o outermost: the weight row stays in cache
      const float* __restrict wrow = w + o * in;
      for (size_t i = 0; i < n; ++i) {
        const float dio = d[i * out + o];
        float* __restrict di = deltaBelow_.data() + i * in;
        for (size_t k = 0; k < in; ++k) di[k] += dio * wrow[k];
      }
    }
    for (size_t j = 0; j < n * in; ++j) {
      deltaBelow_[j] = a[j] > 0.0f ? deltaBelow_[j] : 0.0f;
    }
    delta_.swap(deltaBelow_);
    leave(l, true);
    if (l == 1 && bn_) {
      enter(0, true);
      entered = true;
      batchNormBackward(n, onReady);
    }
  }
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
