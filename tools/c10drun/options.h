// c10drun command line: what the launcher was asked to do.
//
// parseOptions() turns argv into Options, in torchrun's spelling: every long option is accepted
// with dashes and with underscores (--nproc-per-node / --nproc_per_node), as `--opt value` or
// `--opt=value`. Launcher options end at the first non-option word (PROGRAM) or at `--`; all words
// after that are passed to PROGRAM untouched. parseOptions() validates everything it can before any
// process is started (counts, ranks, ports, that PROGRAM exists and is executable) so that a
// mistake costs one clear line on stderr and exit code 2, never a half-started job.
//
// Pure functions of argv, the environment (PATH) and the file system; no threads, nothing blocks.
#pragma once

#include <string>
#include <vector>

#include "c10d/error.h"

namespace c10d {
namespace run {

// Exit code for bad usage (as argparse / torchrun).
constexpr int kUsageExitCode = 2;

// A mistake on the command line. The message is shown as "c10drun: <message>".
class UsageError : public InvalidArgument {
 public:
  explicit UsageError(const std::string& msg) : InvalidArgument(msg) {}
};

struct Options {
  int nprocPerNode = 1;  // local workers
  int nnodes = 1;        // launchers in the job (one per node)
  int nodeRank = 0;      // this launcher's index in [0, nnodes)
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;             // 0: pick a free port (single node only)
  int maxRestarts = 0;            // restarts of the local worker group after a failure
  int monitorIntervalMs = 100;    // poll period (child exits also wake the loop at once)
  double gracePeriodS = 5.0;      // SIGTERM -> SIGKILL delay when stopping workers
  std::string program;            // PROGRAM as given
  std::string programPath;        // PROGRAM resolved through PATH
  std::vector<std::string> args;  // arguments after PROGRAM

  int worldSize() const { return nnodes * nprocPerNode; }
  int globalRank(int localRank) const { return nodeRank * nprocPerNode + localRank; }
};

// What parseOptions() decided: run the job, or exit at once with `exitCode` (after --help: 0).
struct ParseResult {
  bool run = false;
  int exitCode = 0;
  Options options;
};

// Parses and validates argv. Prints --help text to stdout and errors ("c10drun: ...") to stderr.
ParseResult parseOptions(int argc, const char* const* argv);

// Resolves `program` like execvp: a name with '/' is used as is, others are searched in $PATH.
// Throws UsageError "cannot execute 'foo': No such file or directory" (or the errno met).
std::string resolveProgram(const std::string& program);

// The usage text (also printed by --help).
std::string usageText();

}  // namespace run
}  // namespace c10d
