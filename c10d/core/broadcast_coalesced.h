// broadcastCoalesced: broadcast many tensors from `root` with few collective calls, over any
// backend (DDP's initial parameter sync).
//
// Tensors are grouped by (dtype, device) in their given order into buckets of at most
// `bucketBytes` (a tensor larger than that gets a bucket of its own). Each CPU bucket is flattened
// into one temporary buffer, broadcast once, and unflattened into its tensors when that broadcast
// completes; tensors on other devices are broadcast one by one (no host-side flattening).
//
// Returns one Work that completes after every bucket has been broadcast and unflattened; it owns
// the temporary buffers until then. Its error is the first failing bucket's. Collective: every
// rank calls it with the same tensor shapes, dtypes and order (each bucket's per-tensor sizes ride
// in its broadcast's description, so a rank that orders or sizes them differently fails with
// CollectiveMismatchError, as a differing count does). The caller keeps the tensors alive
// and untouched until the Work completes. Blocks only as the group's broadcast does (not at all for
// asynchronous backends). Throws InvalidArgument (before communicating) for bucketBytes == 0 or a
// root out of range.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

constexpr size_t kDefaultBroadcastBucketBytes = 250 * 1024 * 1024;  // torch's DDP default

std::shared_ptr<Work> broadcastCoalesced(ProcessGroup& group, const std::vector<Tensor>& tensors,
                                         size_t bucketBytes = kDefaultBroadcastBucketBytes,
                                         int root = 0);

C10D_NAMESPACE_END
}  // namespace c10d
