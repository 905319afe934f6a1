#include "examples/train_mlp/trainer.h"

#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"
#include "c10d/bootstrap/init.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/process_memory.h"
#include "examples/train_mlp/checkpoint.h"
#include "examples/train_mlp/dataset.h"
#include "examples/train_mlp/model.h"
#include "examples/train_mlp/modes.h"
#include "examples/train_mlp/trace.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One line to stdout, flushed at once: the launcher prefixes and forwards it, and a crash must not
// lose what was printed before it.
void say(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

// The launcher's attempt number: 0 on the first attempt (or without a launcher).
int restartCount() {
  for (const char* name : {"C10D_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return envInt(name, 0);
  }
  return 0;
}

[[noreturn]] void crash(uint64_t step, int rank) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "train_mlp: rank %d: --crash-at-step %" PRIu64
               ": exiting with code 3 at the start of step %" PRIu64
               " (first attempt, C10D_RESTART_COUNT=0)\n",
               rank, step, step);
  std::fflush(stderr);
  std::_Exit(3);  // as abrupt as a real crash: no destructors, no goodbye to the peers
}

// Every rank's `mine` (same length everywhere), rank by rank. Collective.
std::vector<int64_t> allgatherInts(ProcessGroup& pg, std::vector<int64_t> mine) {
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(pg.size()));
  pg.allgatherIntoTensor(tensorOf(all.data(), all.size()), tensorOf(mine.data(), mine.size()))
      ->wait();
  return all;
}

double meanAcrossRanks(ProcessGroup& pg, double value) {
  double v = value;
  pg.allreduce(tensorOf(&v, 1), {ReduceOp::SUM})->wait();
  return v / pg.size();
}

// Every rank learns whether every rank succeeded at something local (reading a checkpoint, writing
// one); the ranks that succeeded throw an error naming the first rank that did not, so that a
// local failure never leaves the others waiting in the next collective. Collective.
void agreeOnSuccess(ProcessGroup* pg, const std::exception_ptr& localError, const char* what) {
  if (pg != nullptr) {
    const auto all = allgatherInts(*pg, {localError ? 0 : 1});
    for (int r = 0; r < pg->size() && !localError; ++r) {
      if (all[r] == 0) {
        C10D_THROW(Error, "rank ", r, " failed ", what, " (its error is in its output)");
      }
    }
  }
  if (localError) std::rethrow_exception(localError);
}

std::string widthsText(const std::vector<size_t>& widths) {
  std::string s;
  for (size_t w : widths) s += (s.empty() ? "" : "-") + std::to_string(w);
  return s;
}

// InvalidArgument unless checkpoint `ck` continues this run (see trainer.h).
void checkResumable(const Checkpoint& ck, const TrainOptions& o, const Mlp& model) {
  const std::string where = "checkpoint " + ck.dir;
  const std::string fresh =
      ": resuming would not continue that run (rerun with the same options, or point "
      "--checkpoint-dir at an empty directory)";
  C10D_CHECK_ARG(ck.meta.widths == model.shape().widths(), where, " holds a ",
                 widthsText(ck.meta.widths), " model but this run builds ",
                 model.shape().describe(), " (--input-dim/--hidden/--layers/--classes)", fresh);
  C10D_CHECK_ARG(ck.numels == model.numels(), where,
                 ": its parameter sizes do not match the model's");
  C10D_CHECK_ARG(ck.meta.seed == o.seed, where, " was written with --seed ", ck.meta.seed,
                 ", this run has --seed ", o.seed, fresh);
  C10D_CHECK_ARG(ck.meta.globalBatch == o.globalBatch, where, " was written with --global-batch ",
                 ck.meta.globalBatch, ", this run has --global-batch ", o.globalBatch, fresh);
  C10D_CHECK_ARG(ck.meta.datasetSize == o.datasetSize, where, " was written with --dataset-size ",
                 ck.meta.datasetSize, ", this run has --dataset-size ", o.datasetSize, fresh);
  C10D_CHECK_ARG(ck.meta.step <= o.steps, where, " is at step ", ck.meta.step,
                 ", past this run's --steps ", o.steps, fresh);
  C10D_CHECK_ARG(ck.optimizer.steps == ck.meta.step, where, ": its optimizer state has taken ",
                 ck.optimizer.steps, " steps but its model is at step ", ck.meta.step);
}

// Finds and reads the newest checkpoint (every rank; see trainer.h). Collective when pg is set.
// zero3 opens it instead (CheckpointDir::open: each rank reads its shards later, and rank 0 alone
// checks the files' checksums; agreeOnSuccess tells the others).
std::optional<Checkpoint> findCheckpoint(const TrainOptions& o, ProcessGroup* pg, int rank,
                                         const Mlp& model) {
  if (o.checkpointDir.empty()) return std::nullopt;
  CheckpointDir dir(o.checkpointDir);
  std::optional<Checkpoint> ck;
  uint64_t latest = 0;
  std::exception_ptr error;
  try {
    if (rank == 0) dir.create();
    latest = dir.latestStep();
    if (latest > 0) {
      ck = o.mode == Mode::kZero3 ? dir.open(latest, rank == 0) : dir.read(latest);
      checkResumable(*ck, o, model);
    }
  } catch (const std::exception&) {
    error = std::current_exception();
  }
  agreeOnSuccess(pg, error, ("to resume from --checkpoint-dir " + o.checkpointDir).c_str());
  if (pg != nullptr) {
    const auto steps = allgatherInts(*pg, {static_cast<int64_t>(latest)});
    for (int r = 0; r < pg->size(); ++r) {
      C10D_CHECK_ARG(static_cast<uint64_t>(steps[r]) == latest, "--checkpoint-dir ",
                     o.checkpointDir, ": rank ", r, " found the newest checkpoint at step ",
                     steps[r], " but rank ", rank, " at step ", latest,
                     ": every rank must see the same directory (a shared file system)");
    }
  }
  return ck;
}

// zero3: every rank gathers one layer at a time (parameters, then optimizer state) and rank 0
// writes it as it comes. A write error on rank 0 is kept, and the remaining layers are still
// gathered (not written), so that the ranks' collectives stay matched until agreeOnSuccess.
void writeCheckpointLayerByLayer(const TrainOptions& o, const CheckpointMeta& meta, int rank,
                                 TrainingMode& mode, const Mlp& model, std::exception_ptr* error) {
  const CheckpointDir dir(o.checkpointDir);
  const bool writer = rank == 0;
  auto attempt = [&](auto&& fn) {
    if (!writer || *error) return;
    try {
      fn();
    } catch (const std::exception&) {
      *error = std::current_exception();
    }
  };
  std::string tmp;
  std::optional<ModelFileWriter> params;
  attempt([&] {
    tmp = dir.begin(meta.step);
    params.emplace(modelFileIn(tmp), meta, model);
  });
  mode.forEachLayer([&](size_t, const std::vector<Tensor>& views) {
    attempt([&] {
      for (const Tensor& t : views) params->add(t.ptr<float>(), t.numel);
    });
  });
  attempt([&] { params->finish(); });
  std::optional<optim::OptimizerStateWriter> state;
  std::vector<size_t> numels = model.numels();
  if (o.optimizer.slotNames().empty()) numels.assign(numels.size(), 0);  // as save() writes
  attempt([&] { state.emplace(optimizerFileIn(tmp), o.optimizer, mode.optimizerSteps(), numels); });
  for (size_t l = 0; l < model.numLayers(); ++l) {
    const auto slots = mode.layerState(l);  // collective
    attempt([&] {
      C10D_CHECK_EQ(slots.size(), model.layerParameters(l).size());
      for (const auto& perParam : slots) state->add(perParam);
    });
  }
  attempt([&] {
    state->finish();
    dir.commit(meta.step, o.keepCheckpoints);
  });
}

void writeCheckpoint(const TrainOptions& o, ProcessGroup* pg, int rank, int world,
                     TrainingMode& mode, const Mlp& model, uint64_t step) {
  CheckpointMeta meta;
  meta.step = step;
  meta.seed = o.seed;
  meta.globalBatch = o.globalBatch;
  meta.datasetSize = o.datasetSize;
  meta.widths = model.shape().widths();
  meta.mode = modeName(o.mode);
  meta.worldSize = world;
  meta.optimizer = o.optimizer.describe();
  std::exception_ptr error;
  if (mode.layerByLayer()) {
    writeCheckpointLayerByLayer(o, meta, rank, mode, model, &error);
  } else {
    // Zero mode: a collective on every rank; the full state lands on rank 0.
    optim::OptimizerState state = mode.fullState();
    if (rank == 0) {
      try {
        CheckpointDir(o.checkpointDir).write(meta, model, state, o.keepCheckpoints);
      } catch (const std::exception&) {
        error = std::current_exception();
      }
    }
  }
  // Also the barrier: once any rank is past it, checkpoint `step` is complete on disk.
  agreeOnSuccess(pg, error, "to write a checkpoint");
}

}  // namespace

void runTraining(const TrainOptions& o) {
  // The process's own memory (RSS), by phase: start-up (everything before the first step), the
  // training steps (checkpoint writes apart), the final checksum and evaluation.
  layers::RssPhases memory;
  memory.begin("start-up");
  // 1. The world. The arguments that depend on the world size are checked between the
  // rendezvous and the backend: every rank raises the same error on its own, and none has yet
  // made a transport (a verbs shm workspace) that the first rank to fail would tear down under
  // the others.
  std::shared_ptr<ProcessGroup> pg;
  int rank = 0;
  int world = 1;
  Rendezvous rv;
  if (o.mode == Mode::kLocal) {
    world = envInt("WORLD_SIZE", 1, 1);
    C10D_CHECK_ARG(world == 1, "--mode local runs in one process, but WORLD_SIZE=", world,
                   ": launch it with --nproc-per-node 1 (or without c10drun), or use --mode ddp "
                   "or zero");
  } else {
    rv = rendezvous(o.initMethod, -1, -1, o.timeout);
    rank = rv.rank;
    world = rv.worldSize;
  }
  C10D_CHECK_ARG(o.crashAtStep == 0 || world >= 2,
                 "--crash-at-step crashes rank 1, but the job has a single rank (run it under "
                 "c10drun --nproc-per-node >= 2)");
  BatchPlan plan(o.datasetSize, o.globalBatch, world, rank, o.seed);
  if (rv.store) {
    InitOptions init;
    init.backend = o.backend;
    init.timeout = o.timeout;
    init.store = rv.store;
    init.rank = rank;
    init.worldSize = world;
    pg = c10d::init(init);
  }

  // 2. Data and model. zero3's model holds no arrays: its mode makes the layers one at a time;
  // zero's holds no gradient array: its mode gives each layer's gradients during backward.
  SyntheticDataset data({o.seed, o.datasetSize, o.evalSize, o.shape.inputDim, o.shape.classes});
  const bool sharded = o.mode == Mode::kZero3;
  Mlp model(o.shape, sharded                 ? Mlp::Arrays::kNone
                     : o.mode == Mode::kZero ? Mlp::Arrays::kParams
                                             : Mlp::Arrays::kParamsAndGrads);
  if (!sharded) model.initialize(o.seed);
  if (pg && o.mode != Mode::kLocal) model.attachGroup(pg);  // --sync-bn: statistics over the group

  // 3. Resume.
  std::optional<Checkpoint> ck = findCheckpoint(o, pg.get(), rank, model);
  if (ck && !sharded) model.setParams(ck->params);
  // ddp/zero: broadcast from rank 0; zero3: each rank reads its shards from the files (a read
  // error on one rank is told to the others before any further collective).
  std::unique_ptr<TrainingMode> mode;
  std::exception_ptr loadError;
  try {
    mode = makeMode(o, model, pg, ck ? &*ck : nullptr);
    if (ck) {
      try {
        mode->loadState(*ck);
      } catch (const InvalidArgument& e) {
        C10D_THROW(InvalidArgument, "resuming from checkpoint ", ck->dir, ": ", e.what());
      }
    }
  } catch (const std::exception&) {
    if (!sharded || !ck) throw;
    loadError = std::current_exception();
  }
  if (sharded && ck) agreeOnSuccess(pg.get(), loadError, ("to resume from " + ck->dir).c_str());
  const uint64_t start = ck ? ck->meta.step : 0;

  if (rank == 0) {
    say(fmt("train_mlp: mode %s, %d rank%s%s%s, model %s (%zu parameters in %zu tensors), %s",
            modeName(o.mode), world, world == 1 ? "" : "s", pg ? " over " : "",
            pg ? pg->describe().c_str() : "", model.shape().describe().c_str(), model.numel(),
            model.numParameters(), o.optimizer.describe().c_str()));
    say(
        fmt("train_mlp: global batch %zu (%zu per rank), %zu steps per epoch of %zu samples, "
            "%zu held-out, seed %" PRIu64 ", %" PRIu64 " steps",
            o.globalBatch, plan.microBatch(), plan.stepsPerEpoch(), o.datasetSize, o.evalSize,
            o.seed, o.steps));
    if (ck) {
      say(fmt("train_mlp: resumed from %s (step %" PRIu64 ", written by %d rank%s in %s mode)",
              ck->dir.c_str(), ck->meta.step, ck->meta.worldSize,
              ck->meta.worldSize == 1 ? "" : "s", ck->meta.mode.c_str()));
      if (start == o.steps) say("train_mlp: the checkpoint is at the last step: nothing to train");
    }
  }
  ck.reset();  // the checkpoint's copies are no longer needed

  // 4. Train.
  std::optional<TraceWriter> trace;
  if (!o.traceFile.empty()) {
    trace.emplace(o.traceFile, rank, world);
    model.recordTimings(true);
  }
  const int attempt = restartCount();
  std::vector<float> x;
  std::vector<int32_t> labels;
  memory.begin("training");
  const auto trainStart = Clock::now();
  for (uint64_t step = start + 1; step <= o.steps; ++step) {
    if (step == o.crashAtStep && rank == 1 && attempt == 0) crash(step, rank);
    const auto t0 = Clock::now();
    const int64_t stepBeginNs = trace ? FlightRecorder::nowNs() : 0;
    data.gather(plan.indices(step), &x, &labels);
    const double loss = model.forward(x.data(), labels.data(), labels.size());
    memory.sample();  // the activations
    model.backward([&](size_t p) { mode->markReady(p); });
    memory.sample();  // the gradients (ddp, zero) before the step frees or reduces them
    mode->step();
    memory.sample();
    const double ms = secondsSince(t0) * 1e3;
    if (trace) {
      trace->step(step, stepBeginNs, FlightRecorder::nowNs(), model.takeTimings(),
                  mode->takeComm());
    }
    if (step % o.logEvery == 0 || step == o.steps) {
      const double mean = pg ? meanAcrossRanks(*pg, loss) : loss;
      if (rank == 0) say(fmt("step %" PRIu64 " loss %.9g ms %.3f", step, mean, ms));
    }
    if (o.checkpointEvery > 0 && step % o.checkpointEvery == 0) {
      memory.begin("checkpoints");
      writeCheckpoint(o, pg.get(), rank, world, *mode, model, step);
      if (rank == 0) say(fmt("checkpoint step %" PRIu64 " written", step));
      memory.begin("training");
    }
  }
  const double trainSeconds = secondsSince(trainStart);
  memory.begin("evaluation");

  // 5. The end.
  if (trace) {
    trace->finish(pg.get());
    if (rank == 0) say("train_mlp: trace written to " + o.traceFile);
  }
  const uint64_t checksum = mode->checksum(model);
  memory.sample();
  if (pg) {
    const auto sums = allgatherInts(*pg, {static_cast<int64_t>(checksum)});
    for (int r = 1; r < world; ++r) {
      if (sums[r] != sums[0]) {
        C10D_THROW(
            Error, "after training, rank ", r, "'s parameters differ from rank 0's (checksum ",
            fmt("0x%016" PRIx64, static_cast<uint64_t>(sums[r])), " vs ",
            fmt("0x%016" PRIx64, static_cast<uint64_t>(sums[0])), "): the replicas diverged");
      }
    }
  }
  const double finalLoss =
      mode->evaluate(model, data.evalInputs(), data.evalLabels(), data.evalSize());
  memory.end();
  if (mode->summaryPerRank() || rank == 0) {
    for (const std::string& line : mode->summary()) say(line);
  }
  say(fmt("memory: rank %d: ", rank) + layers::describePhases(memory));
  if (pg) pg->barrier()->wait();  // the per-rank summaries before rank 0's last lines
  if (rank == 0) {
    const uint64_t ran = o.steps - start;
    say(fmt("train_mlp: %" PRIu64 " steps in %.3f s (%.3f ms/step, %.0f samples/s)", ran,
            trainSeconds, ran > 0 ? trainSeconds * 1e3 / ran : 0.0,
            trainSeconds > 0 ? static_cast<double>(ran * o.globalBatch) / trainSeconds : 0.0));
    say(fmt("final params 0x%016" PRIx64, checksum));
    say(fmt("final loss %.9g", finalLoss));
  }
  if (pg) {
    pg->barrier()->wait();  // rank 0 hosts the store: it leaves last
    pg->shutdown();
  }
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
