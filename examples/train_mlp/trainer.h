// The training loop of train_mlp: process group, data, model, mode, checkpoints, logging.
//
// One run
//   1. local: no process group (WORLD_SIZE must be 1). ddp / zero: c10d::init(--backend,
//      --init-method) under the --timeout-s bound.
//   2. The dataset and the model from --seed; the batch plan of this rank (dataset.h).
//   3. Resume: with --checkpoint-dir, every rank finds the newest checkpoint and reads it; the
//      ranks compare (an allgather) that they found the same step and could all read it, so that
//      a problem is the same error on every rank rather than a hang. The checkpoint must match this
//      run (model shape, seed, global batch, dataset size, optimizer: InvalidArgument naming the
//      file and both values); its parameters replace the initial ones, its optimizer state is
//      loaded after the mode is built, and training continues at the step after it. zero3 opens
//      the checkpoint instead of reading it: each rank reads the ranges of its own shards from
//      the files (rank 0 alone streams them for their checksums), so no rank ever holds the whole
//      model or optimizer state.
//   4. Steps start+1 .. --steps: forward on this rank's micro-batch, backward (markReady per
//      parameter, last layer first), the mode's step(); every --log-every steps (and the last)
//      the micro-batch losses are averaged across ranks (an allreduce, after the mode's
//      collectives) and rank 0 prints "step <k> loss <v> ms <t>". After every
//      --checkpoint-every-th step: the full optimizer state on rank 0 (zero: consolidateState, a
//      collective), rank 0 writes the checkpoint, then a barrier, so that once any rank is past
//      step k, checkpoint k is on disk.
//   5. The end: the ranks check that their parameters are bit-identical (an allgather of
//      checksums), the final model is evaluated on the held-out set, rank 0 prints the mode's
//      summary, "final params <checksum>" and, last, "final loss <v>".
// --crash-at-step K: rank 1 flushes its output and _exit(3)s at the start of step K when
// C10D_RESTART_COUNT (or TORCHELASTIC_RESTART_COUNT) is 0 or unset.
//
// Determinism: the data of step s depends on (seed, step) only, every kernel sums in a fixed
// order, and a resumed run rebuilds the same state (parameters, optimizer slots and step count), so
// a run resumed at the same world size reproduces the uninterrupted run bit for bit. Across world
// sizes and modes the only difference is the order of the gradient sums (fp32 rounding).
//
// Errors: every failure propagates as an exception (InvalidArgument for bad configuration or
// checkpoints, TimeoutError / CommError from collectives); main() prints it and exits 1.
// Threads: the calling thread only (plus the backend's own).
#pragma once

#include "c10d/base/abi.h"
#include "examples/train_mlp/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

// Runs the whole training; returns normally when done (rank 0 has printed the final loss).
void runTraining(const TrainOptions& options);

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
