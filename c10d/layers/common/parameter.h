// Parameter: a model parameter as the layers see it (the DDP Reducer, the ZeRO sharded optimizer):
// a name for messages and two non-owning tensor views, the values and the framework's gradient.
// The framework owns the memory and keeps it alive and in place for the layer's lifetime.
#pragma once

#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

struct Parameter {
  std::string name;  // for messages, e.g. "fc1.weight" (empty: "parameter <i>" only)
  Tensor data;       // the values; overwritten by rank 0's when a layer is constructed
  // The framework's gradient (same numel, dtype and device as data). The Reducer ignores it with
  // gradientAsBucketView, where the gradient lives at gradView(i).
  Tensor grad;
};

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
