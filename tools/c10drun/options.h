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

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

// Exit code for bad usage (as argparse / torchrun).
constexpr int kUsageExitCode = 2;

// A mistake on the command line. The message is shown as "c10drun: <message>".
class UsageError : public InvalidArgument {
 public:
  explicit UsageError(const std::string& msg) : InvalidArgument(msg) {}
};

// --rdzv-conf for a dynamic rendezvous (key=value,...; torchrun's keys where it has them). Times
// are given in seconds on the command line.
struct RendezvousConf {
  // How long a launcher may wait for a round that takes it (fewer than MIN nodes: an error).
  std::chrono::milliseconds joinTimeout{600000};
  // Once MIN nodes have joined, how long the round stays open for more (up to MAX).
  std::chrono::milliseconds lastCallTimeout{30000};
  // How long a member of a closed round waits for the others' records (its master address).
  std::chrono::milliseconds closeTimeout{30000};
  // A launcher's heartbeat period; a peer missing keepAliveMaxAttempt beats in a row is dead.
  std::chrono::milliseconds keepAliveInterval{5000};
  int keepAliveMaxAttempt = 3;
  // Timeout of one request to the rendezvous store.
  std::chrono::milliseconds readTimeout{60000};
  // c10d backend: host the store (true), connect to it (false), unset: host it when the
  // endpoint is an address of this machine and its port is still free.
  std::optional<bool> isHost;
};

struct Options {
  int nprocPerNode = 1;  // local workers
  int nnodes = 1;        // launchers in the job (one per node); elastic: the MAX of MIN:MAX
  int nodeRank = 0;      // this launcher's index in [0, nnodes)
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;             // 0: pick a free port (single node only)
  int maxRestarts = 0;            // restarts of the local worker group after a failure
  int monitorIntervalMs = 100;    // poll period (child exits also wake the loop at once)
  double gracePeriodS = 5.0;      // SIGTERM -> SIGKILL delay when stopping workers
  std::string program;            // PROGRAM as given
  std::string programPath;        // PROGRAM resolved through PATH
  std::vector<std::string> args;  // arguments after PROGRAM

  // Rendezvous: "static" (the --node-rank / --master-addr job above), or a dynamic one ("c10d":
  // a TCPStore at the endpoint; "etcd": an etcd server), where nodes join rounds.
  std::string rdzvBackend = "static";
  std::string rdzvEndpoint;  // HOST[:PORT] (c10d: port 29400 when left out)
  std::string rdzvId = "none";
  RendezvousConf rdzvConf;
  int minNodes = 1;       // dynamic: MIN of --nnodes MIN:MAX (MAX is nnodes)
  std::string localAddr;  // this node's address for peers (MASTER_ADDR); "" = its host name

  bool elastic() const { return rdzvBackend != "static"; }

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
C10D_NAMESPACE_END
}  // namespace c10d
