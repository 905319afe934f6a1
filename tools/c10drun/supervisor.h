// The c10drun supervisor: runs the local worker group, watches it, stops it, restarts it.
//
// One thread, one poll loop over: the SignalEvents fd (worker exits via SIGCHLD, termination
// signals sent to the launcher) and the stdout/stderr pipes of every worker (lines are prefixed
// and copied to the launcher's own stdout/stderr). The loop also wakes every
// --monitor-interval-ms as a backstop.
//
// Lifecycle of one attempt: spawn N workers (ranks from the node rank, a fresh free MASTER_PORT if
// none was given), monitor until all exit 0 (success), one fails (non-zero exit or killed), or
// the launcher is signalled. To stop, every live worker's process group gets SIGTERM (or the
// signal the launcher received), then SIGKILL after the grace period (at once on a second
// signal). Output left in the pipes is drained, partial lines completed, and processes left in a
// worker's process group are SIGKILLed, so nothing outlives an attempt. After a failure the group
// is restarted while restarts remain. Every wait is bounded: the grace period, then 10 s for
// SIGKILLed workers to be reaped, then 200 ms to drain output held open by stragglers.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tools/c10drun/options.h"
#include "tools/c10drun/output.h"
#include "tools/c10drun/process.h"
#include "tools/c10drun/secret.h"
#include "tools/c10drun/signals.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

// Where one attempt of the local group sits in the job: from the options (static rendezvous) or
// from a rendezvous round (elastic).
struct GroupSpec {
  int groupRank = 0;       // this node's rank (GROUP_RANK)
  int groupWorldSize = 1;  // nodes in the job (GROUP_WORLD_SIZE)
  std::string masterAddr;
  int masterPort = 0;  // 0: a fresh free port
  int restartCount = 0;
  std::vector<std::string> extraEnv;  // more "KEY=VALUE" for every worker
};

class Supervisor {
 public:
  // Writes worker output and its own messages to `outFd` / `errFd`.
  Supervisor(Options options, SignalEvents& signals, int outFd = 1, int errFd = 2);

  // Runs a static job to the end; returns the launcher's exit code (see usageText()).
  int run();

  // The pieces run() is made of, for the elastic agent (tools/c10drun/elastic_agent.h).
  enum class Outcome { kSuccess, kFailure, kSignal, kExternal };
  // Spawns the local group; throws ExecError / Error as spawnWorker (workers already started are
  // left running: stopGroup + finishGroup them).
  void startGroup(const GroupSpec& spec);
  // Until every worker succeeded, one failed, the launcher was signalled, or `stopCheck` (called
  // every --monitor-interval-ms, may be empty) returned true (kExternal).
  Outcome monitor(const std::function<bool()>& stopCheck = {});
  void stopGroup(int sig);
  void finishGroup();
  // Waits up to `timeoutMs` for a signal to the launcher (or worker output); see signal().
  void pollOnce(int timeoutMs);
  // The first termination signal received (0: none).
  int signal() const { return signal_; }
  // After kFailure: "rank R (pid P) failed: exited with code C", and its exit code (1 if it was
  // killed by a signal).
  std::string failureText() const;
  int failureCode() const;
  void message(const std::string& text);

 private:
  struct Worker {
    int localRank = 0;
    int rank = 0;
    pid_t pid = -1;
    bool running = false;
    ExitStatus status;
    Fd out;
    Fd err;
    LinePrefixer outPrefix;
    LinePrefixer errPrefix;
  };
  void readStream(Fd& fd, LinePrefixer& prefixer);
  void drainAndClose(Fd& fd, LinePrefixer& prefixer);
  void reap();
  bool anyRunning() const;
  bool anyPipeOpen() const;
  std::vector<std::string> workerEnv(int localRank, const GroupSpec& spec, int port) const;

  Options options_;
  JobSecret secret_;  // decided once: the same for every restart
  SignalEvents& signals_;
  int outFd_;
  int errFd_;
  std::vector<Worker> workers_;
  bool stopping_ = false;  // failures seen while stopping are our own doing
  int failed_ = -1;        // index of the first failed worker of this attempt
  int signal_ = 0;         // first termination signal received
  int signalCount_ = 0;
};

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
