#include "examples/train_mlp/options.h"

#include <cmath>
#include <iostream>

#include <CLI/CLI.hpp>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

const char* modeName(Mode m) {
  switch (m) {
    case Mode::kLocal:
      return "local";
    case Mode::kDdp:
      return "ddp";
    case Mode::kZero:
      return "zero";
    case Mode::kZero3:
      return "zero3";
  }
  return "?";
}

namespace {

constexpr const char* kDescription =
    "train_mlp: trains a small MLP on synthetic data from a seed, in one process (--mode local) or "
    "data-parallel over the ranks c10drun starts (--mode ddp: the DDP Reducer; --mode zero: the "
    "ZeRO-2 sharded optimizer; --mode zero3: parameters sharded too, gathered layer by layer). "
    "The same seed and global batch give the same loss curve in every "
    "mode and at every world size, within fp32 rounding.";

constexpr const char* kFooter = R"(Examples:
  train_mlp --mode local --steps 30
  c10drun --nproc-per-node 4 train_mlp --mode ddp --steps 30 --backend gloo
  c10drun --nproc-per-node 2 --max-restarts 1 train_mlp --mode zero --checkpoint-dir /tmp/ck \
      --checkpoint-every 10 --crash-at-step 17

Output (rank 0): one line per logged step, "step <k> loss <mean over ranks> ms <step time>", a
summary, and last "final loss <v>": the final model's mean cross-entropy on the evaluation set
(%.9g, so equal values mean equal floats). Exit codes: 0 done, 1 a runtime error (named on stderr),
2 bad usage, 3 the crash --crash-at-step asked for.)";

struct RawOptions {
  std::string mode = "ddp";
  std::string optimizer = "sgd";
  double lr = NAN;
  double momentum = NAN;
  double weightDecay = NAN;
  double timeoutS = 300;
  double bucketCapKb = 25 * 1024;
  double firstBucketKb = 1024;
  std::string gradReduction = "reduce_scatter";
  bool noPrefetch = false;
  bool noReduceOverlap = false;
};

class UsageError : public InvalidArgument {
 public:
  explicit UsageError(const std::string& msg) : InvalidArgument(msg) {}
};

void buildApp(CLI::App& app, RawOptions& raw, TrainOptions& o) {
  app.description(kDescription);
  app.footer(kFooter);
  app.add_option("--mode", raw.mode,
                 "local | ddp | zero (ZeRO-2; also zero2) | zero3 (FSDP) (default ddp)")
      ->type_name("MODE");
  app.add_option("--steps", o.steps, "Optimizer steps in the whole run (default 30)")
      ->type_name("N");
  app.add_option("--seed", o.seed, "Seeds the model, the data and the shuffle (default 0)")
      ->type_name("S");
  app.add_option("--global-batch", o.globalBatch,
                 "Samples per step over all ranks; a multiple of the world size (default 64)")
      ->type_name("B");
  app.add_option("--backend", o.backend, "Process-group backend (default: the best available)")
      ->type_name("NAME");
  app.add_option("--init-method", o.initMethod,
                 "env:// (default; c10drun sets it up), tcp://H:P?rank=R&world_size=N, file://...")
      ->type_name("URL");
  app.add_option("--timeout-s", raw.timeoutS, "Bound on the rendezvous and every collective (300)")
      ->type_name("S");
  app.add_option("--log-every", o.logEvery, "Print every k-th step's loss (default 1)")
      ->type_name("K");
  app.add_option("--input-dim", o.shape.inputDim, "Input features (default 32)")->type_name("N");
  app.add_option("--hidden", o.shape.hidden, "Units per hidden layer (default 2048)")
      ->type_name("N");
  app.add_option("--layers", o.shape.layers, "Linear layers, >= 1 (default 5)")->type_name("N");
  app.add_option("--classes", o.shape.classes, "Output classes (default 10)")->type_name("N");
  app.add_flag("--sync-bn", o.shape.batchNorm,
               "SyncBatchNorm after the first linear layer, over the whole global batch");
  app.add_option("--dataset-size", o.datasetSize, "Training samples (default 4096)")
      ->type_name("N");
  app.add_option("--eval-size", o.evalSize, "Held-out samples for the final loss (default 1024)")
      ->type_name("N");
  app.add_option("--optimizer", raw.optimizer, "sgd | adam | adamw (default sgd)")
      ->type_name("NAME");
  app.add_option("--lr", raw.lr, "Learning rate (default: sgd 0.05, adam/adamw 0.002)")
      ->type_name("LR");
  app.add_option("--momentum", raw.momentum, "SGD momentum (default 0.9)")->type_name("M");
  app.add_option("--weight-decay", raw.weightDecay,
                 "L2 (sgd, adam) or decoupled (adamw) decay (default: 0, adamw 0.01)")
      ->type_name("WD");
  app.add_option("--bucket-cap-kb", raw.bucketCapKb,
                 "ddp, zero: gradient bucket cap in KiB (25600)")
      ->type_name("KB");
  app.add_option("--first-bucket-kb", raw.firstBucketKb, "ddp: first bucket's cap in KiB (1024)")
      ->type_name("KB");
  app.add_option("--grad-reduction", raw.gradReduction,
                 "zero: reduce_scatter (default) | reduce_to_owner")
      ->type_name("HOW");
  app.add_option("--trace", o.traceFile,
                 "Write every step's timeline (layer compute, collectives) as a Chrome trace "
                 "(chrome://tracing, Perfetto) to FILE")
      ->type_name("FILE");
  app.add_flag("--no-prefetch", raw.noPrefetch,
               "zero3: gather each layer only when it is needed (default: the next layer's "
               "gather overlaps this one's compute)");
  app.add_flag("--no-reduce-overlap", raw.noReduceOverlap,
               "zero3: wait for each layer's gradient reduce-scatter before the next layer's "
               "backward (one layer's full gradients at a time; default: it overlaps)");
  app.add_option("--checkpoint-dir", o.checkpointDir,
                 "Write checkpoints here, and resume from the newest one found at start-up")
      ->type_name("DIR");
  app.add_option("--checkpoint-every", o.checkpointEvery,
                 "Checkpoint after every K-th step (default 0: never)")
      ->type_name("K");
  app.add_option("--keep-checkpoints", o.keepCheckpoints, "Newest checkpoints kept (default 2)")
      ->type_name("N");
  app.add_option("--crash-at-step", o.crashAtStep,
                 "Rank 1 exits with code 3 at the start of step K, on the first attempt only "
                 "(C10D_RESTART_COUNT=0), to exercise c10drun --max-restarts")
      ->type_name("K");
}

Mode parseMode(const std::string& s) {
  if (s == "zero2") return Mode::kZero;
  for (Mode m : {Mode::kLocal, Mode::kDdp, Mode::kZero, Mode::kZero3}) {
    if (s == modeName(m)) return m;
  }
  throw UsageError("--mode '" + s + "': expected local, ddp, zero (zero2) or zero3");
}

size_t kbToBytes(const char* opt, double kb) {
  if (!(kb >= 1 && kb <= 1024.0 * 1024 * 1024)) {
    throw UsageError(std::string(opt) + " must be in [1, 2^30] KiB (got " + std::to_string(kb) +
                     ")");
  }
  return static_cast<size_t>(kb * 1024);
}

void validate(const RawOptions& raw, TrainOptions& o) {
  o.mode = parseMode(raw.mode);
  if (o.steps < 1) throw UsageError("--steps must be >= 1");
  if (o.globalBatch < 1) throw UsageError("--global-batch must be >= 1");
  if (o.logEvery < 1) throw UsageError("--log-every must be >= 1");
  if (!(raw.timeoutS > 0 && raw.timeoutS <= 86400)) {
    throw UsageError("--timeout-s must be in (0, 86400] (got " + std::to_string(raw.timeoutS) +
                     ")");
  }
  o.timeout = Milliseconds(static_cast<int64_t>(std::ceil(raw.timeoutS * 1000)));
  try {
    o.shape.validate();
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  if (o.datasetSize < 1) throw UsageError("--dataset-size must be >= 1");
  if (o.evalSize < 1) throw UsageError("--eval-size must be >= 1");
  if (o.datasetSize < o.globalBatch) {
    throw UsageError("--dataset-size " + std::to_string(o.datasetSize) +
                     " is smaller than --global-batch " + std::to_string(o.globalBatch) +
                     ": not one full batch");
  }

  optim::OptimizerOptions& opt = o.optimizer;
  try {
    opt.algorithm = optim::parseAlgorithm(raw.optimizer);
  } catch (const InvalidArgument&) {
    throw UsageError("--optimizer '" + raw.optimizer + "': expected sgd, adam or adamw");
  }
  const bool sgd = opt.algorithm == optim::Algorithm::kSgd;
  if (!sgd && !std::isnan(raw.momentum)) {
    throw UsageError("--momentum applies to --optimizer sgd only (got --optimizer " +
                     raw.optimizer + ")");
  }
  opt.lr = !std::isnan(raw.lr) ? raw.lr : sgd ? 0.05 : 0.002;
  opt.momentum = sgd ? (std::isnan(raw.momentum) ? 0.9 : raw.momentum) : 0.0;
  opt.weightDecay = !std::isnan(raw.weightDecay)                ? raw.weightDecay
                    : opt.algorithm == optim::Algorithm::kAdamW ? 0.01
                                                                : 0.0;
  try {
    opt.validate();
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }

  o.prefetch = !raw.noPrefetch;
  o.overlapReduce = !raw.noReduceOverlap;
  o.bucketCapBytes = kbToBytes("--bucket-cap-kb", raw.bucketCapKb);
  o.firstBucketBytes = kbToBytes("--first-bucket-kb", raw.firstBucketKb);
  using GR = zero::ZeroOptions::GradReduction;
  if (raw.gradReduction == "reduce_scatter" || raw.gradReduction == "reduce-scatter") {
    o.gradReduction = GR::kReduceScatter;
  } else if (raw.gradReduction == "reduce_to_owner" || raw.gradReduction == "reduce-to-owner") {
    o.gradReduction = GR::kReduceToOwner;
  } else {
    throw UsageError("--grad-reduction '" + raw.gradReduction +
                     "': expected reduce_scatter or reduce_to_owner");
  }

  if (o.checkpointEvery > 0 && o.checkpointDir.empty()) {
    throw UsageError("--checkpoint-every " + std::to_string(o.checkpointEvery) +
                     " needs --checkpoint-dir");
  }
  if (o.keepCheckpoints < 1) throw UsageError("--keep-checkpoints must be >= 1");
  if (o.shape.batchNorm && !o.checkpointDir.empty()) {
    throw UsageError(
        "--sync-bn with --checkpoint-dir: checkpoints do not hold the batch norm's running "
        "statistics yet, so a resumed run would evaluate differently");
  }
  if (o.crashAtStep > 0) {
    if (o.mode == Mode::kLocal) {
      throw UsageError(
          "--crash-at-step crashes rank 1: it needs --mode ddp, zero or zero3 on >= 2 ranks");
    }
    if (o.crashAtStep > o.steps) {
      throw UsageError("--crash-at-step " + std::to_string(o.crashAtStep) +
                       " is after the last step (--steps " + std::to_string(o.steps) + ")");
    }
  }
}

}  // namespace

ParseResult parseOptions(int argc, const char* const* argv) {
  ParseResult result;
  RawOptions raw;
  CLI::App app{kDescription, "train_mlp"};
  buildApp(app, raw, result.options);
  try {
    app.parse(argc, argv);
    validate(raw, result.options);
    result.run = true;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help() << std::flush;
    result.exitCode = 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "train_mlp: " << e.what() << "\nRun 'train_mlp --help' for usage.\n";
    result.exitCode = kUsageExitCode;
  } catch (const UsageError& e) {
    std::cerr << "train_mlp: " << e.what() << "\n";
    result.exitCode = kUsageExitCode;
  }
  return result;
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
