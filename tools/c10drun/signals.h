// Signals seen by the c10drun launcher, delivered as readable events in its poll loop.
//
// SignalEvents blocks SIGCHLD and the termination signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) in
// the calling thread and reads them through a signalfd, so the one poll loop of the launcher wakes
// on worker exits, worker output and signals alike, with no async-signal-safety concerns. It also
// ignores SIGPIPE (a closed launcher stdout must not kill the launcher). The destructor restores
// the previous mask and SIGPIPE disposition. childSigmask() is the mask a forked worker must
// restore before exec. The launcher is single-threaded: create one SignalEvents in main().
#pragma once

#include <signal.h>

#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tools/c10drun/process.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

class SignalEvents {
 public:
  SignalEvents();
  ~SignalEvents();
  SignalEvents(const SignalEvents&) = delete;
  SignalEvents& operator=(const SignalEvents&) = delete;

  // The fd to poll for POLLIN.
  int fd() const { return fd_.get(); }

  // Reads every pending signal without blocking; returns their numbers in arrival order
  // (SIGCHLD included; the caller reaps children on it).
  std::vector<int> drain();

  // The signal mask to restore in a forked child before exec.
  const sigset_t& childSigmask() const { return oldMask_; }

  // True for the signals the launcher forwards to workers.
  static bool isTermination(int sig);

 private:
  sigset_t oldMask_;
  struct sigaction oldPipe_;
  Fd fd_;
};

// "SIGKILL" for 9, "signal 77" when unknown.
std::string signalName(int sig);

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
