// Per-op option structs. Every op takes a timeout; kUnsetTimeout means the group's default
// (ProcessGroup::Options::timeout).
#pragma once

#include <cstdint>
#include <vector>

#include "base/types.h"
#include "core/reduce_op.h"

namespace c10d {

struct BroadcastOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
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

}  // namespace c10d
