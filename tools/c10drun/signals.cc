#include "tools/c10drun/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

namespace {
constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
}  // namespace

SignalEvents::SignalEvents() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (int sig : kTerminationSignals) {
    // A signal the launcher was started with ignored (nohup, `cmd &` in a script) stays ignored,
    // as shells do; workers inherit the SIG_IGN.
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&mask, sig);
  }
  if (sigprocmask(SIG_BLOCK, &mask, &oldMask_) != 0) throwSystemError("sigprocmask", errno);
  int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
    throwSystemError("signalfd", err);
  }
  fd_.reset(fd);
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &oldPipe_);
}

SignalEvents::~SignalEvents() {
  sigaction(SIGPIPE, &oldPipe_, nullptr);
  fd_.reset();
  sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
}

std::vector<int> SignalEvents::drain() {
  std::vector<int> out;
  signalfd_siginfo info[16];
  for (;;) {
    ssize_t n = read(fd_.get(), info, sizeof(info));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: nothing more pending
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(info[0]); ++i) {
      out.push_back(static_cast<int>(info[i].ssi_signo));
    }
  }
  return out;
}

bool SignalEvents::isTermination(int sig) {
  for (int s : kTerminationSignals) {
    if (s == sig) return true;
  }
  return false;
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return std::string("SIG") + abbrev;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  return "signal " + std::to_string(sig);
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
