// Worker processes of the c10drun launcher: spawning, exit statuses, signalling.
//
// spawnWorker() forks and execs one worker with its stdout and stderr on fresh pipes (the read
// ends, non-blocking and close-on-exec, are returned for the launcher's poll loop) and stdin on
// /dev/null. The child, before exec: becomes the leader of its own process group (so the
// launcher can signal the worker and whatever it spawned as one unit), asks for SIGKILL when the
// launcher dies (PR_SET_PDEATHSIG, then checks getppid() to close the race with a launcher that
// died before the prctl), restores the signal mask and SIGPIPE disposition, and execs. A failing
// exec is reported back through a close-on-exec pipe and thrown as ExecError in the launcher.
// Everything the child needs is prepared before fork(); the child only makes syscalls.
//
// Nothing here blocks except spawnWorker() waiting for the child's exec (bounded by execve).
#pragma once

#include "c10d/base/fd.h"

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

// Throws c10d::Error "<what> failed: <strerror> (ENAME, errno N)" (c10d::detail::errnoString).
[[noreturn]] void throwSystemError(const std::string& what, int err);

using ::c10d::Fd;

// exec of PROGRAM failed in the child (errno `err`).
class ExecError : public Error {
 public:
  ExecError(const std::string& msg, int err) : Error(msg), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

// What a command to run looks like: absolute or relative path, argv[0..], full environment.
struct Command {
  std::string path;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "KEY=VALUE"
};

struct SpawnedProcess {
  pid_t pid = -1;
  Fd stdoutRead;
  Fd stderrRead;
};

// Forks and execs `cmd` as described at the top. `childMask` is the signal mask for the child.
SpawnedProcess spawnWorker(const Command& cmd, const sigset_t& childMask);

// How a process ended, from a waitpid status.
struct ExitStatus {
  bool exited = false;  // else: killed by a signal
  int code = 0;         // exit code when exited
  int signal = 0;       // signal number when killed
  static ExitStatus fromWaitStatus(int status);
  bool success() const { return exited && code == 0; }
  // "exited with code 3" / "killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

// Sends `sig` to the worker's process group when it still leads one, else to the worker alone.
// Errors (already gone) are ignored.
void signalWorker(pid_t pid, int sig);

// Sends `sig` to the process group `pgid` (stragglers left by an exited worker); ignores ESRCH.
void signalGroup(pid_t pgid, int sig);

// The environment of this process, with `overrides` ("KEY=VALUE") replacing same-named entries.
std::vector<std::string> mergedEnvironment(const std::vector<std::string>& overrides);

// A TCP port that was free a moment ago: binds port 0 on all IPv4 addresses and closes it.
int findFreePort();

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
