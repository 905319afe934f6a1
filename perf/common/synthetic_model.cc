#include "perf/common/synthetic_model.h"

#include <chrono>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

float gradValue(int rank, size_t layer, size_t i) {
  return 0.25f * static_cast<float>(rank % 8 + 1) + 0.125f * static_cast<float>((i + layer) % 8);
}

float expectedMean(int worldSize, size_t layer, size_t i) {
  float sum = 0;
  for (int r = 0; r < worldSize; ++r) sum += gradValue(r, layer, i);
  return sum / static_cast<float>(worldSize);
}

float initValue(size_t layer, size_t i) {
  return 0.0625f * static_cast<float>((i + 3 * layer) % 16) - 0.5f;
}

void initParameters(float* data, size_t layers, size_t perLayer) {
  for (size_t l = 0; l < layers; ++l) {
    for (size_t i = 0; i < perLayer; ++i) data[l * perLayer + i] = initValue(l, i);
  }
}

void workPass(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.5f + 1.0f;
  // The memory is used: no pass may be optimized away before the final write overwrites it.
  asm volatile("" : : "r"(x) : "memory");
}

void layerBackward(float* g, size_t n, size_t extraUpdates, int rank, size_t layer) {
  if (n == 0) return;
  for (; extraUpdates >= n; extraUpdates -= n) workPass(g, n);
  if (extraUpdates > 0) workPass(g, extraUpdates);
  // gradValue repeats every 8 elements: store the 8 values block by block (vectorizes like a
  // memset, where computing each value would cost several times the other passes).
  float pattern[8];
  for (size_t k = 0; k < 8; ++k) pattern[k] = gradValue(rank, layer, k);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t k = 0; k < 8; ++k) g[i + k] = pattern[k];
  }
  for (; i < n; ++i) g[i] = pattern[i % 8];
}

SyntheticModel::SyntheticModel(size_t layersIn, size_t perLayerIn)
    : layers(layersIn),
      perLayer(perLayerIn),
      data(layersIn * perLayerIn),
      grad(layersIn * perLayerIn) {
  initParameters(data.data(), layers, perLayer);
}

std::vector<float> referenceParameters(const optim::OptimizerOptions& options, size_t layer,
                                       size_t perLayer, int worldSize, uint64_t steps) {
  std::vector<float> p(perLayer), g(perLayer);
  for (size_t i = 0; i < perLayer; ++i) {
    p[i] = initValue(layer, i);
    g[i] = expectedMean(worldSize, layer, i);
  }
  optim::FlatOptimizer opt(options, perLayer);
  for (uint64_t s = 0; s < steps; ++s) opt.step(p.data(), g.data());
  return p;
}

KernelSpeed measureKernels(size_t perLayer, double seconds) {
  using Clock = std::chrono::steady_clock;
  std::vector<float> x(perLayer, 1.0f);
  KernelSpeed k;
  if (perLayer == 0) return k;
  auto rate = [&](auto&& kernel) {
    kernel();  // fault in, warm up
    size_t reps = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      kernel();
      ++reps;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < seconds);
    return elapsed * 1e9 / (static_cast<double>(reps) * static_cast<double>(perLayer));
  };
  k.passNs = rate([&] { workPass(x.data(), perLayer); });
  k.writeNs = rate([&] { layerBackward(x.data(), perLayer, 0, 0, 0); });
  return k;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
