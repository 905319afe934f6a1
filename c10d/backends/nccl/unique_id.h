// Sharing an NCCL unique id through a group's Store. CUDA-free (the id is 128 opaque bytes), so it
// is tested with real processes on machines without a GPU.
//
// Rank 0 generates the id (ncclGetUniqueId, passed in as `generate`) and sets it under `key`;
// every other rank waits for the key up to `timeout` and reads it. The group's store is already
// scoped to the group (a PrefixStore for sub-groups), and the key carries a per-group counter of
// communicators (uniqueIdKey(n)), so two communicators never share an id.
//
// Blocks the calling thread up to `timeout` (non-zero ranks). Throws TimeoutError naming the rank,
// the group, the key and the timeout when rank 0 never sets it, and Error when the stored value is
// not 128 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace nccl {

constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
using UniqueIdBytes = std::array<uint8_t, kUniqueIdBytes>;

// "nccl/uid/<n>": the key of the group's n-th communicator.
std::string uniqueIdKey(uint64_t n);

UniqueIdBytes exchangeUniqueId(Store& store, int rank, const std::string& key, Milliseconds timeout,
                               const std::function<UniqueIdBytes()>& generate,
                               const std::string& groupName);

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
