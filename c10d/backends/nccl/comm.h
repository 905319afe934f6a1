// NCCL communicators with bounded blocking: created nonblocking (ncclConfig_t.blocking = 0) so that
// init, split and every launch can be waited for with a deadline instead of hanging.
//
// A nonblocking communicator answers ncclInProgress while it works in the background; nothing may
// be called on it until ncclCommGetAsyncError says otherwise. waitReady() polls it (short sleeps,
// growing to 1 ms) until it is ready, failed, or the deadline passes. On failure or timeout the
// create/split functions abort the half-made communicator before throwing. Private to the backend.
#pragma once

#include <nccl.h>

#include <chrono>
#include <string>

#include "c10d/backends/nccl/unique_id.h"
#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

using Clock = std::chrono::steady_clock;

// Blocks until `comm` is no longer ncclInProgress. Throws TimeoutError at `deadline` (the
// communicator is left as is: the caller aborts it), or the NCCL error (cuda_check.h's types) when
// it failed. `what` names the operation and group for messages.
void waitReady(ncclComm_t comm, Clock::time_point deadline, const std::string& what);

// ncclCommInitRankConfig (nonblocking) on the current CUDA device, ready within `timeout`.
ncclComm_t createComm(const UniqueIdBytes& id, int nranks, int rank, Milliseconds timeout,
                      const std::string& what);

// ncclCommSplit of `parent` (every rank of the parent calls it), ready within `timeout`. Returns
// nullptr for color NCCL_SPLIT_NOCOLOR.
ncclComm_t splitComm(ncclComm_t parent, int color, int key, Milliseconds timeout,
                     const std::string& what);

// ncclCommAbort; never throws. Returns "" or a description of the failure. The handle is invalid
// afterwards.
std::string abortComm(ncclComm_t comm) noexcept;

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
