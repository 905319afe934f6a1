// The elastic agent of c10drun (--rdzv-backend c10d|etcd): torchrun's dynamic launch.
//
// Loop: join a rendezvous round (tools/c10drun/rendezvous.h) -> start the local workers with the
// round's ranks (RANK = group_rank * nproc_per_node + local_rank, WORLD_SIZE = members *
// nproc_per_node, MASTER_ADDR:MASTER_PORT a fresh port on group rank 0's node for every round,
// TORCHELASTIC_RESTART_COUNT the job's restarts so far) -> watch them and the round together ->
//   all workers exited 0      mark this node done and exit 0 (the store's host first waits until
//                             every member is done or gone, so that nobody loses the store);
//   a local worker failed     end the round as a failure (a restart), stop the workers, re-join;
//   the round ended elsewhere (a peer's failure, a peer's heartbeat stale, a node waiting to
//                             join while the round has fewer than MAX): stop the workers, re-join;
//   a signal to the launcher  end the round as a failure, forward the signal, exit 128+signal.
// A round is only joined while the job's restarts are <= --max-restarts; past that, and when no
// round takes this node within join_timeout (fewer than MIN nodes), the launcher exits non-zero
// with a line naming the rendezvous, the round and the cause (the failed worker's exit code when
// it was this node's, else 1). Losing the store (its host died) is an error naming it.
//
// One thread (plus the TCPStore server's when this launcher hosts the c10d store); every wait is
// bounded by the rendezvous timeouts, the grace period, or the store's read_timeout.
#pragma once

#include "c10d/base/abi.h"
#include "tools/c10drun/options.h"
#include "tools/c10drun/signals.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

// Runs the elastic job described by `options` (options.elastic()); returns the exit code.
int runElastic(const Options& options, SignalEvents& signals, int outFd = 1, int errFd = 2);

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
