// ddp_step_perf's flags and table: what one data-parallel training step costs with the DDP
// Reducer, with one flat allreduce, with no communication, and with ZeRO-2 and ZeRO-3.
//
// The benchmark (perf/ddp_step_perf.cc, which explains the modes and columns) times the same
// synthetic backward (perf/common/synthetic_model.h) in several modes, interleaved. This header
// holds the pure parts, so that tests can drive them: the flags (nccl-tests' letters where one
// fits: -n -w -c -T -J, plus the model's and the Reducer's), the model's geometry, and the text
// table (format and its inverse). No threads, nothing blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "perf/common/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// kZero and kZeroOwner are ZeRO-2 (ShardedOptimizer), kZero3 ZeRO-3 (FullyShardedModel).
enum class StepMode { kNone, kFlat, kDdp, kDdpView, kDdpOpt, kZero, kZeroOwner, kZero3 };

// "none", "flat", "ddp", "ddp-view", "ddp+opt", "zero", "zero-owner", "zero3"; parseStepMode also
// takes "zero2" for kZero and returns false for anything else. allStepModes() lists them in that
// order (the default --modes).
const char* stepModeName(StepMode m);
bool parseStepMode(const std::string& name, StepMode* mode);
const std::vector<StepMode>& allStepModes();

struct DdpStepOptions {
  // Model: `layers` layers of `paramsPerLayer` fp32 parameters each (one tensor per layer);
  // modelBytes = layers * paramsPerLayer * 4 once parsed (see parseDdpStepOptions).
  size_t modelBytes = 64u << 20;  // --model-bytes
  size_t layers = 24;             // --layers
  size_t paramsPerLayer = 0;      // --params-per-layer
  // Backward compute per layer in microseconds; < 0: calibrated at start-up to computeRatio x the
  // time of one flat allreduce of the whole model, spread evenly over the layers.
  double computeUsPerLayer = -1;  // --compute-us-per-layer
  double computeRatio = 1.0;      // --compute-ratio
  // Reducer (torch's bucket_cap_mb and first bucket; MB = 2^20 bytes as in torch).
  size_t bucketCapBytes = 25u << 20;                     // --bucket-cap-mb
  size_t firstBucketBytes = 1u << 20;                    // --first-bucket-mb
  std::vector<StepMode> modes = allStepModes();          // --modes none,flat,...
  optim::Algorithm optimizer = optim::Algorithm::kAdam;  // --optimizer: ddp+opt, zero*, state
  int iters = 20;                                        // -n: timed steps per mode
  int warmupIters = 3;   // -w: untimed steps per mode first (the Reducer rebuilds in the first)
  int check = 1;         // -c: checked steps per reducing mode after timing (0 = none)
  int timeoutSec = 600;  // -T: per-op and rendezvous timeout
  std::string backend;   // --backend ("" = c10d::defaultBackend())
  std::string jsonPath;  // -J / --json
};

// Parses argv into *o and resolves the model's geometry: any two of --model-bytes, --layers and
// --params-per-layer give the third (--model-bytes is rounded down to a whole number of layers
// of whole fp32 parameters); one alone is completed with the defaults (64M, 24 layers); all three
// must agree. Every bad value is a kError naming the flag and the value.
ParseResult parseDdpStepOptions(int argc, char** argv, DdpStepOptions* o);
std::string ddpStepUsage(const std::string& program);

// "%.<digits>f" of v; "12.34 MiB" (2^20 bytes).
std::string formatFixed(double v, int digits);
std::string formatMiB(double bytes);

// One row of the table. Negative values print as N/A (exposedMs: NaN, as it may be negative).
// Bytes print as MiB (2^20) with two decimals, so a parsed row holds them to 5 KiB.
struct StepRow {
  std::string mode;
  double stepMinMs = 0;    // fastest step (each step: the slowest rank's time)
  double stepMedMs = 0;    // median step
  double exposedMs = 0;    // stepMed - none's stepMed: communication the step did not hide
  double commMs = -1;      // median time a collective of the step was in flight (TimedGroup)
  double overlapPct = -1;  // Reducer: 100 x overlappedSeconds / commSeconds, over all steps
  double busBw = -1;       // 2(n-1)/n x model bytes / comm (GB/s, 1e9)
  int64_t peakBytes = -1;  // the mode's layer memory at its peak during a step, largest rank
  int64_t liveBytes = -1;  // the mode's layer memory between steps, largest rank
  // The process's RSS: the most a timed step raised the peak (VmHWM) above the RSS before it,
  // largest rank; -1 where /proc/self/clear_refs is refused.
  int64_t rssRiseBytes = -1;
  int64_t wrong = -1;  // wrong elements in the checked steps, over ranks
};

// "#      mode   step_min ... busbw       peak       live   #wrong" and the units line.
std::string stepTableHeader();
std::string stepTableRow(const StepRow& row);
// The inverse of stepTableRow (N/A -> -1); false for any other line.
bool parseStepTableRow(const std::string& line, StepRow* row);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
