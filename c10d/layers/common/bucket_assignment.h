// assignBuckets: group tensors into size-capped buckets per (dtype, device), the way torch's
// compute_bucket_assignment_by_size does, for the DDP Reducer and any layer that flattens many
// tensors into few collectives.
//
// Tensors are visited in `order` (a permutation of their indices). Each (dtype, device) key keeps
// one open bucket; a tensor joins its key's open bucket, and the bucket closes as soon as its
// bytes reach the key's current limit. Limits are taken from `limits` in turn per key, the last one
// repeating: with {1 MiB, 25 MiB} the first bucket of every key closes at 1 MiB and the rest at
// 25 MiB. A bucket therefore passes its limit by less than one tensor, and a tensor larger than
// the limit sits alone. Buckets come out ordered by the position in `order` of their first tensor
// (the order in which they are expected to fill), members in visiting order.
//
// Pure function; throws InvalidArgument for an `order` that is not a permutation of
// [0, specs.size()) or an empty / zero limit.
#pragma once

#include <cstddef>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

struct TensorSpec {
  size_t numel = 0;
  DataType dtype = DataType::kFloat32;
  Device device = Device::cpu();
  size_t nbytes() const { return numel * elementSize(dtype); }
};

struct BucketSpec {
  DataType dtype = DataType::kFloat32;
  Device device = Device::cpu();
  std::vector<size_t> members;  // tensor indices, in visiting order
  size_t bytes = 0;
};

std::vector<BucketSpec> assignBuckets(const std::vector<TensorSpec>& specs,
                                      const std::vector<size_t>& order,
                                      const std::vector<size_t>& limits);

// The permutation n-1, n-2, ..., 0 (DDP's initial order: gradients of the last layers are ready
// first in backward).
std::vector<size_t> reverseOrder(size_t n);

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
