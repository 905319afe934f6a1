// train_mlp's command line: what the run was asked to do.
//
// parseOptions() turns argv into TrainOptions (CLI11, the spelling of tools/c10drun: long options,
// `--opt value` or `--opt=value`), and validates everything that does not need the process group:
// a mistake costs one line on stderr and exit code 2 before any rendezvous. What depends on the
// world size (the global batch's divisibility, --crash-at-step's rank 1) is checked by the trainer
// once the group exists, with the same message on every rank.
//
// Pure function of argv; no threads, nothing blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/zero/sharded_optimizer.h"
#include "examples/train_mlp/model.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

enum class Mode { kLocal, kDdp, kZero, kZero3 };
const char* modeName(Mode m);  // "local", "ddp", "zero" (ZeRO-2; "zero2" parses too), "zero3"

struct TrainOptions {
  Mode mode = Mode::kDdp;
  uint64_t steps = 30;
  uint64_t seed = 0;
  size_t globalBatch = 64;
  std::string backend;  // "" = the best available (c10d::defaultBackend())
  std::string initMethod = "env://";
  Milliseconds timeout{300000};  // every collective and the rendezvous
  uint64_t logEvery = 1;         // print (and average across ranks) every k-th step's loss

  MlpShape shape;
  size_t datasetSize = 4096;
  size_t evalSize = 1024;

  optim::OptimizerOptions optimizer;

  // ddp
  size_t bucketCapBytes = 25u << 20;
  size_t firstBucketBytes = 1u << 20;
  // zero3
  bool prefetch = true;
  bool overlapReduce = true;
  // zero
  zero::ZeroOptions::GradReduction gradReduction = zero::ZeroOptions::GradReduction::kReduceScatter;

  std::string checkpointDir;     // "" = no checkpoints, no resume
  uint64_t checkpointEvery = 0;  // 0 = write none (still resume from what the directory holds)
  size_t keepCheckpoints = 2;
  uint64_t crashAtStep = 0;  // 0 = never
  std::string traceFile;     // "" = no trace
};

// The exit code for bad usage (as c10drun and argparse).
constexpr int kUsageExitCode = 2;

struct ParseResult {
  bool run = false;
  int exitCode = 0;  // when !run: 0 after --help, kUsageExitCode after a mistake
  TrainOptions options;
};

// Parses and validates argv; prints --help to stdout and mistakes ("train_mlp: ...") to stderr.
ParseResult parseOptions(int argc, const char* const* argv);

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
