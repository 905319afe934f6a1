// ddp_step_perf: what one data-parallel training step costs with the DDP Reducer (bucketed
// allreduces overlapping backward), with one flat allreduce after backward, with no communication,
// with ZeRO-2 (ShardedOptimizer) and with ZeRO-3 (FullyShardedModel), on any backend and world
// size; and how much memory each rank holds for it: measured per mode, and the optimizer state
// under DDP (a full copy) and under ZeRO (its shard).
//
// The model and its backward: perf/common/synthetic_model.h (--layers layers of
// --params-per-layer fp32 parameters, last layer first; real work per layer, then the gradient's
// final values, then markReady for the layer in the modes that have a Reducer or ZeRO-2
// optimizer). There is no forward compute, in any mode.
//
// Calibration (every rank, before timing; printed in the header): the kernels' speed is measured
// on one layer while every rank runs them (so oversubscribed ranks calibrate under the contention
// the steps will see), averaged over ranks. Unless --compute-us-per-layer is given, one allreduce
// of the whole model is timed (one flat buffer, median of 3 after a warm-up, slowest rank) and
// backward's compute is set to --compute-ratio (default 1) x that time, spread evenly over the
// layers: then a perfect overlap would hide all of the communication and ddp's step would take
// as long as none's. A layer's compute is never below its gradient write.
//
// Modes, timed side by side: each of the -w + -n iterations runs every mode once, in an order that
// rotates with the iteration; every step starts after a barrier (untimed, on the world group).
//   none        backward only.
//   flat        backward; every gradient copied into one flat buffer, one SUM allreduce, divide by
//               the world size, copy back: what a loop without a Reducer does.
//   ddp         backward with Reducer::markReady per layer, then finalize(): buckets of
//               --bucket-cap-mb (the first --first-bucket-mb) allreduced as they fill, overlapping
//               the rest of backward.
//   ddp-view    ddp with gradientAsBucketView: backward writes the gradients into the buckets.
//   ddp+opt     ddp, then a --optimizer step over the whole model on every rank (FlatOptimizer).
//   zero        ZeRO-2 (also accepted as zero2): backward with ShardedOptimizer::markReady, each
//               bucket of gradients reduce-scattered as it fills, overlapping backward; then
//               step(): the owner's optimizer step on its shard, the allgather of parameters.
//   zero-owner  ZeRO-2 with kReduceToOwner: buckets reduced to their owner as they fill
//               (ShardedDDP), overlapping backward.
//   zero3       ZeRO-3: FullyShardedModel with one unit per layer (prefetch on). Forward:
//               unshard(l, kForward) and reshard(l) for each layer, first to last (the last stays
//               for backward), with no compute between: its allgathers are exposed. Backward, last
//               layer first: unshard(l, kBackward) (prefetching l - 1), the layer's work written
//               into grads(l), reduceGrads(l); then step().
// A step's time is the slowest rank's; a row gives the fastest and the median step. `exposed` is
// the median step minus none's: the communication backward did not hide (plus, for ddp+opt and
// the zero modes, the optimizer step; for zero3, forward's gathers). `comm` is the median over
// steps of the time during which at least one of the step's collectives was in flight
// (perf/common/timed_group.h wraps the group to see the Reducer's and ZeRO's own collectives), on
// the rank where it was shortest: a rank's time includes waiting for the ranks that reach a
// collective after it, and the last to arrive waits for none. busbw = 2(n-1)/n x model bytes /
// comm, comparable with all_reduce_perf's (a reduce-scatter plus an allgather move the same bytes
// per rank as an allreduce; zero3 gathers the parameters twice, so its busbw understates the bytes
// it moved by a third). `overlap` is the Reducer's IterationStats: 100 x sum(overlappedSeconds) /
// sum(commSeconds) over every timed step and rank (the share of each bucket's launch-to-completion
// time that passed before finalize() began; the buckets queue behind each other, so a bucket's time
// includes its wait for the earlier ones).
//
// Memory: `peak` and `live` (MiB, largest rank) are the bytes the layers allocate for the mode,
// as layers::layerMemory() counts them (c10d/layers/common/memory.h): the DDP Reducer's buckets
// (which hold the gradients in ddp-view), flat's buffer, ddp+opt's optimizer state,
// ShardedOptimizer's shards, staging and state, FullyShardedModel's shards, state and gathered
// units. `live` is held between steps (after the last timed one), `peak` the most during a timed
// step. Not counted: the model's own parameter and gradient arrays (the framework's tensors,
// printed once as `# model arrays`: add them for every mode but zero3, which needs neither, and
// ddp-view, whose gradients are its buckets), the backends' internal buffers, and the benchmark's
// own copies (zero3's gathered check). One process holds every mode's objects, so a mode's figures
// are its own: its objects' bytes (measured as they are built, plus what its steps leave allocated)
// plus a step's rise over the bytes live before it (resetLayerMemoryPeak() before each step;
// FullyShardedModel::step() resets the peak itself, so zero3's comes from FsdpStepStats).
//
// Process memory (RSS, /proc/self; c10d/layers/common/process_memory.h): what the kernel counts, so
// also the model, the backends' scratch and what the allocator keeps. By phase, the largest
// rank's: start-up (the process's start to the first step), the steps (peak: VmHWM; RSS sampled
// after every step), the check; per mode, the most one timed step raised the peak above the RSS
// before it (VmHWM restarted by /proc/self/clear_refs before each step). One process holds every
// mode, so the phases' figures are the sum of all modes' objects; train_mlp measures one mode per
// process.
//
// Check (-c): after timing, each mode but none runs -c more steps; every rank compares what the
// mode produced with references it computes itself: the averaged gradients (flat, ddp, ddp-view,
// ddp+opt) against the exact mean over ranks, and the parameters (ddp+opt, zero, zero-owner, and
// zero3's gathered by FullyShardedModel::gatherParameters) against one unsharded optimizer stepped
// as many times with that mean (synthetic_model.h).
// `#wrong` counts wrong elements over ranks; any makes the exit status 1.
// C10D_PERF_INJECT_ERROR=1 corrupts one element on the last rank before each check.
//
// Optimizer state: --optimizer's (default Adam: exp_avg and exp_avg_sq, 8 bytes per parameter)
// bytes per rank: DDP's full state against ZeRO-2's ShardedOptimizer::localStateBytes() at this
// world size (largest and smallest over ranks), and fullStateBytes(); with zero3, its state and
// its parameter + gradient shards per rank (the same on every rank).
//
// Output on rank 0 (-J: the same as JSON); the other ranks only compute. Times and counts travel
// over the group's Store (perf/common/world.h), never through the backend being measured.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/base/error.h"
#include "perf/common/buffer.h"
#include "perf/common/ddp_step.h"
#include "perf/common/ddp_step_bench.h"
#include "perf/common/report.h"
#include "perf/common/world.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

std::string timeNow() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// null for N/A (negative, or NaN).
nlohmann::json orNull(double v) {
  return std::isnan(v) || v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
}

void writeJson(const std::string& path, nlohmann::json doc) {
  std::ofstream f(path, std::ios::trunc);
  f << doc.dump(2) << "\n";
  f.close();
  C10D_CHECK(!f.fail(), "ddp_step_perf: cannot write the JSON file '", path, "'");
}

int run(int argc, char** argv, const std::string& program, const DdpStepOptions& o) {
  const std::string start = timeNow();
  const LaunchInfo launch = detectLaunch();
  PerfOptions po;
  po.backend = o.backend;
  po.timeoutSec = o.timeoutSec;
  std::shared_ptr<ProcessGroup> world = createWorld(launch, po);
  const bool rank0 = world->rank() == 0;
  auto print = [rank0](const std::string& text) {
    if (!rank0) return;
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  };
  DdpStepBench b(o, world);
  std::string modes;
  for (StepMode m : o.modes) modes += std::string(modes.empty() ? "" : ",") + stepModeName(m);
  print(detail::str("# DDP step test starting: ", program, "\n"));
  print(detail::str("# c10d version ", C10D_VERSION, " backend ", world->backendName(),
                    " device cpu world size ", world->size(), " launcher ", launch.launcher, "\n"));
  print(detail::str("# model ", formatMiB(static_cast<double>(o.modelBytes)), " fp32: ", o.layers,
                    " layers x ", o.paramsPerLayer, " parameters (one tensor per layer); ",
                    b.optimizer().describe(), "\n"));
  print(detail::str("# warmup iters: ", o.warmupIters, " iters: ", o.iters, " validation: ",
                    o.check, " modes: ", modes, " (interleaved, order rotated every iteration)\n"));
  print("#\n# Using devices\n");
  const std::vector<std::string> lines =
      b.exchange().allgather(rankLine(world->rank(), 0, static_cast<int>(getpid()), hostName(), 0,
                                      describeDevice(Device::cpu()), world->describe()));
  for (const auto& l : lines) print(l);
  print("#\n");

  b.setUp();
  print(b.calibrate());
  b.run();
  print(b.bucketLine());
  b.check();
  const layers::RssPhases memory = b.processMemory();
  const std::vector<StepRow> rows = b.rows();
  const StateBytes state = b.stateBytes();
  print("#\n" + stepTableHeader());
  int64_t wrong = 0;
  for (const StepRow& r : rows) {
    print(stepTableRow(r));
    wrong += std::max<int64_t>(0, r.wrong);
  }
  const std::string algo = optim::algorithmName(o.optimizer);
  const double arrays = static_cast<double>(b.modelArrayBytes());
  print(detail::str(
      "#\n# optimizer state per rank (", algo, ", ", b.optimizer().slotNames().size(),
      " slots): ddp ", formatMiB(static_cast<double>(state.ddp)),
      " (the full state on every rank); zero ", formatMiB(static_cast<double>(state.zeroMax)),
      " largest, ", formatMiB(static_cast<double>(state.zeroMin)), " smallest shard at world size ",
      world->size(), " (",
      formatFixed(state.zeroMax > 0 ? static_cast<double>(state.zeroFull) / state.zeroMax : 0.0, 2),
      "x less; full ", formatMiB(static_cast<double>(state.zeroFull)), ")\n"));
  if (state.zero3Shards > 0) {
    print(detail::str("# zero3 per rank: state ", formatMiB(static_cast<double>(state.zero3State)),
                      ", parameter + gradient shards ",
                      formatMiB(static_cast<double>(state.zero3Shards)), "\n"));
  }
  print(detail::str("# model arrays per rank, not in peak/live: parameters ", formatMiB(arrays),
                    " + gradients ", formatMiB(arrays),
                    " (zero3 needs neither; ddp-view's gradients are its buckets)\n"));
  print("# process memory per rank (RSS, the largest rank's): " + layers::describePhases(memory) +
        "\n");
  std::string rises;
  for (const StepRow& r : rows) {
    rises += (rises.empty() ? "" : ", ") + r.mode + " " + layers::mib(r.rssRiseBytes);
  }
  print("# a timed step's rise of the RSS peak over the RSS before it (largest rank): " + rises +
        "\n");
  print(detail::str("# Out of bounds values : ", wrong, wrong ? " FAILED" : " OK", "\n"));
  print(detail::str("#\n# DDP step test concluded: ", program, "\n#\n"));

  if (rank0 && !o.jsonPath.empty()) {
    nlohmann::json doc;
    doc["program"] = program;
    doc["version"] = C10D_VERSION;
    doc["start_time"] = start;
    doc["args"] = std::vector<std::string>(argv, argv + argc);
    doc["backend"] = world->backendName();
    doc["describe"] = world->describe();
    doc["device"] = "cpu";
    doc["world_size"] = world->size();
    doc["launcher"] = launch.launcher;
    doc["devices"] = lines;
    doc["config"] = {
        {"model_bytes", o.modelBytes},
        {"layers", o.layers},
        {"params_per_layer", o.paramsPerLayer},
        {"bucket_cap_bytes", o.bucketCapBytes},
        {"first_bucket_bytes", o.firstBucketBytes},
        {"bucket_bytes", b.bucketBytes()},
        {"optimizer", b.optimizer().describe()},
        {"iterations", o.iters},
        {"warmup_iterations", o.warmupIters},
        {"check", o.check},
        {"modes", modes},
        {"compute_us_per_layer", b.computeUsPerLayer()},
        {"compute_target_us_per_layer", b.targetUsPerLayer()},
        {"compute_ratio", o.computeUsPerLayer < 0 ? orNull(o.computeRatio) : nullptr},
        {"flat_allreduce_ms",
         o.computeUsPerLayer < 0 ? orNull(b.flatAllreduceSec() * 1e3) : nullptr},
        {"kernel_pass_ns_per_element", b.kernelSpeed().passNs},
        {"kernel_write_ns_per_element", b.kernelSpeed().writeNs},
        {"extra_updates_per_layer", b.extraUpdatesPerLayer()},
    };
    doc["results"] = nlohmann::json::array();
    for (const StepRow& r : rows) {
      doc["results"].push_back(
          {{"mode", r.mode},
           {"step_ms_min", r.stepMinMs},
           {"step_ms_median", r.stepMedMs},
           {"exposed_ms",
            std::isnan(r.exposedMs) ? nlohmann::json(nullptr) : nlohmann::json(r.exposedMs)},
           {"comm_ms", orNull(r.commMs)},
           {"overlap_pct", orNull(r.overlapPct)},
           {"bus_bw", orNull(r.busBw)},
           {"peak_bytes", r.peakBytes < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.peakBytes)},
           {"live_bytes", r.liveBytes < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.liveBytes)},
           {"rss_step_rise_bytes",
            r.rssRiseBytes < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.rssRiseBytes)},
           {"nwrong", r.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.wrong)}});
    }
    doc["optimizer_state"] = {{"optimizer", algo},
                              {"ddp_bytes_per_rank", state.ddp},
                              {"zero_full_bytes", state.zeroFull},
                              {"zero_max_bytes_per_rank", state.zeroMax},
                              {"zero_min_bytes_per_rank", state.zeroMin},
                              {"zero3_state_bytes_per_rank", state.zero3State},
                              {"zero3_shard_bytes_per_rank", state.zero3Shards}};
    nlohmann::json phases = nlohmann::json::array();
    for (const layers::RssPhases::Phase& p : memory.phases()) {
      phases.push_back({{"phase", p.name},
                        {"peak_bytes", p.peakBytes},
                        {"peak_is_phase", p.peakIsPhase},
                        {"sampled_max_bytes", p.sampledMaxBytes},
                        {"last_bytes", p.lastBytes},
                        {"samples", p.samples}});
    }
    doc["process_memory"] = {{"phases", phases}, {"process_peak_bytes", memory.processPeakBytes()}};
    doc["model_array_bytes"] = {{"parameters", b.modelArrayBytes()},
                                {"gradients", b.modelArrayBytes()}};
    doc["out_of_bounds"] = wrong;
    doc["end_time"] = timeNow();
    writeJson(o.jsonPath, doc);
  }
  world->shutdown();
  // Rank 0 serves the store: it leaves last.
  b.exchange().finish(Milliseconds(static_cast<int64_t>(o.timeoutSec) * 1000));
  return wrong != 0 ? 1 : 0;
}

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

int main(int argc, char** argv) {
  using namespace c10d::perf;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string program = argv[0];
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  DdpStepOptions o;
  const ParseResult parsed = parseDdpStepOptions(argc, argv, &o);
  if (parsed.action == ParseResult::kHelp) {
    std::fputs(ddpStepUsage(program).c_str(), stdout);
    return 0;
  }
  if (parsed.action == ParseResult::kError) {
    std::fprintf(stderr, "%s: %s\n%s", program.c_str(), parsed.message.c_str(),
                 ddpStepUsage(program).c_str());
    return 2;
  }
  try {
    return run(argc, argv, program, o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
}
