// Fault-injection hooks for tests (tests/faults/): ways to break a running verbs group from inside
// one of its ranks that no outside signal can produce. Nothing in the runtime calls them; they add
// no state and no check to any data path, so they cost nothing unless a test calls them.
#pragma once

#include <cstdint>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class ProcessGroup;

namespace verbs {

// Shuts down (shutdown(2), SHUT_RDWR) this rank's collective-channel connection to `peer` in
// `pg`, as a reset by the network or a half-dead peer would: the next receive on it returns EOF
// and the next send EPIPE, on both ends, so both fail their op with CommError naming the other.
// The fd stays open until the group closes it, so a thread polling it at the same time is safe.
// Any thread. Throws InvalidArgument when `pg` is not a verbs group on the tcp transport, or
// `peer` is not another rank of it.
void closeConnectionForTesting(ProcessGroup& pg, int peer);

// The single-copy sends (C10D_SHM_CMA) this rank of `pg` posted so far, over both channels, so a
// test can tell the path it meant to cover was taken. Call it with no op of `pg` running (after
// wait()). Throws InvalidArgument when `pg` is not a verbs group on the shm transport.
uint64_t shmSingleCopySendsForTesting(ProcessGroup& pg);

// How often this rank of `pg` moved its collective thread off a CPU a peer shared
// (C10D_SHM_SPREAD). Same conditions as above.
uint64_t shmCpuMovesForTesting(ProcessGroup& pg);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
