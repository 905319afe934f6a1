// Command-line options of the perf binaries: nccl-tests' flags (same letters, long names and
// defaults as nccl-tests 2.19) plus c10d's --backend, --device and --print-config.
//
// parseOptions() never exits: it returns a ParseResult saying whether to run, print the usage or
// fail (with a message), so that tests can drive it. Pure functions; no threads, nothing blocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// How the per-rank average op times are combined into the printed one (nccl-tests' -a).
enum class TimeCombine { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

struct PerfOptions {
  size_t minBytes = 32 * 1024 * 1024;  // -b
  size_t maxBytes = 32 * 1024 * 1024;  // -e
  size_t stepBytes = 1 * 1024 * 1024;  // -i
  size_t stepFactor = 1;               // -f (> 1 wins over -i)
  int iters = 20;                      // -n
  int warmupIters = 1;                 // -w
  int aggIters = 1;                    // -m
  int check = 1;                       // -c: validation passes per row (0 = none)
  int blocking = 0;                    // -z: 0 = wait once per row; 1, 2 = wait after each op
  TimeCombine average = TimeCombine::kAverage;  // -a
  int root = 0;                                 // -r (-1 = every rank in turn, as nccl-tests)
  // -o / -d: one value, or every one ("all").
  std::vector<ReduceOp::Kind> ops{ReduceOp::SUM};
  std::vector<std::string> opNames{"sum"};
  std::vector<DataType> dtypes{DataType::kFloat32};
  int timeoutSec = 600;        // -T: per-op and rendezvous timeout
  std::string backend;         // --backend ("" = c10d::defaultBackend())
  std::string device = "cpu";  // --device cpu|cuda
  std::string jsonPath;        // -J
};

// "-b 4K": digits with an optional K/M/G (or KiB/MiB/GiB) suffix, 2^10, 2^20, 2^30, as nccl-tests'
// parsesize (c10d/base/settings.h's parseByteSize).
// Returns false on anything else.
bool parseSize(const std::string& text, size_t* bytes);

// nccl-tests' names for the reduce ops in -o order ("sum", "prod", "max", "min", "avg", "mulsum")
// and the types -d all runs ("int8", "uint8", "int32", "int64", "half", "float", "double",
// "bfloat16").
const std::vector<std::string>& allOpNames();
const std::vector<DataType>& allDataTypes();

struct ParseResult {
  // kPrintConfig: --print-config (print the backend's settings and exit, no rendezvous).
  enum Action { kRun, kHelp, kPrintConfig, kError } action = kRun;
  std::string message;  // for kError
};
ParseResult parseOptions(int argc, char** argv, PerfOptions* options);

// The usage text ("USAGE: <program> ...").
std::string usage(const std::string& program);

// What every perf binary's main() does first: stdout line-buffered, `program` set to argv[0]'s
// base name, the options parsed. Returns -1 to go on running, else the exit code after answering
// here (--help printed: 0; a usage error printed with the usage: 2).
int startPerfMain(int argc, char** argv, PerfOptions* options, std::string* program);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
