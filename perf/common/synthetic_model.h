// The synthetic model ddp_step_perf trains: `layers` layers of `perLayer` fp32 parameters, one
// tensor per layer, its parameters and gradients each one contiguous allocation (layer l at
// l * perLayer), and a simulated backward that spends a chosen amount of real work per layer.
//
// Backward work (layerBackward): passes of x = 0.5 x + 1 over the layer's gradient (a vectorized
// multiply-add streaming through it: memory-bound once a layer outgrows the caches, like the
// element-wise part of a real backward), then one pass writing the gradient's final values. The
// work is a count of element updates, not a wall-clock budget, so that a backward slowed down by
// communication competing for the CPU takes longer, as a real one would.
//
// Values (all exactly representable): rank r's gradient element i of layer l is gradValue(r, l, i),
// a multiple of 1/8 below 3, so the sum over any number of ranks up to 2^20 is exact in fp32
// whatever the order, and the mean computed as SUM then divide by n (ZeRO, the flat allreduce) is
// expectedMean(n, l, i) to the last bit. The DDP Reducer averages as torch does (each rank's
// gradient times 1/n, then the SUM), which rounds once per rank where n is not a power of two:
// its check allows 4 ulps. Initial parameters are initValue(l, i) on every rank.
//
// Pure functions and a plain value type; no threads, nothing blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/layers/optim/flat_optimizer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

float gradValue(int rank, size_t layer, size_t i);
float expectedMean(int worldSize, size_t layer, size_t i);
float initValue(size_t layer, size_t i);
// data[l * perLayer + i] = initValue(l, i).
void initParameters(float* data, size_t layers, size_t perLayer);

// One pass of backward work over x[0, n).
void workPass(float* x, size_t n);
// Layer `layer`'s backward on rank `rank`: `extraUpdates` element updates of work on g[0, n)
// (whole passes, then a partial one), then g[i] = gradValue(rank, layer, i).
void layerBackward(float* g, size_t n, size_t extraUpdates, int rank, size_t layer);

struct SyntheticModel {
  SyntheticModel(size_t layers, size_t perLayer);  // parameters = initValue, gradients = 0

  size_t layers;
  size_t perLayer;
  std::vector<float> data;  // layers * perLayer
  std::vector<float> grad;  // layers * perLayer

  size_t numel() const { return layers * perLayer; }
  float* layerData(size_t l) { return data.data() + l * perLayer; }
  float* layerGrad(size_t l) { return grad.data() + l * perLayer; }
};

// What an unsharded optimizer holds after `steps` steps from initValue, every step with the mean
// gradient of `worldSize` ranks: layer `layer`'s parameters, computed here with a FlatOptimizer
// over that layer alone (the update is element-wise, so this equals one optimizer over the whole
// model). The reference for the optimizer modes' parameters.
std::vector<float> referenceParameters(const optim::OptimizerOptions& options, size_t layer,
                                       size_t perLayer, int worldSize, uint64_t steps);

// Speed of the backward kernels on this rank, measured on one layer of `perLayer` elements for at
// least `seconds` each: nanoseconds per element update of workPass, and per element of the final
// gradient write.
struct KernelSpeed {
  double passNs = 0;
  double writeNs = 0;
};
KernelSpeed measureKernels(size_t perLayer, double seconds);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
