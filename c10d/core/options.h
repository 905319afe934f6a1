// Per-op option structs. Every op takes a timeout; kUnsetTimeout means the group's default
// (ProcessGroup::Options::timeout).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct BroadcastOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
  // Set when the tensor is several tensors laid end to end (broadcastCoalesced's buckets): their
  // element counts, summing to its numel. Compared across ranks with the rest of the op's
  // description, so ranks that split it differently fail instead of unflattening misaligned data.
  std::shared_ptr<const std::vector<uint64_t>> parts = nullptr;
};

struct AllreduceOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
  Milliseconds timeout = kUnsetTimeout;
};

using AllreduceCoalescedOptions = AllreduceOptions;

struct ReduceOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
};

struct AllgatherOptions {
  Milliseconds timeout = kUnsetTimeout;
  // allgatherIntoTensor only: set when each rank's input is several tensors laid end to end (the
  // torch plugin's allgather_coalesced): their element counts, summing to the input's numel.
  // Compared across ranks as BroadcastOptions::parts is.
  std::shared_ptr<const std::vector<uint64_t>> parts = nullptr;
};

struct GatherOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
};

struct ScatterOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
};

struct ReduceScatterOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
  Milliseconds timeout = kUnsetTimeout;
};

struct AllToAllOptions {
  Milliseconds timeout = kUnsetTimeout;
};

struct BarrierOptions {
  Milliseconds timeout = kUnsetTimeout;
};

struct SendRecvOptions {
  int tag = 0;
  Milliseconds timeout = kUnsetTimeout;
};

C10D_NAMESPACE_END
}  // namespace c10d
