#include "tools/c10drun/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "c10d/base/abi.h"
#include "tools/c10drun/signals.h"

extern char** environ;

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

void throwSystemError(const std::string& what, int err) {
  throw Error(what + " failed: " + detail::errnoString(err));
}

namespace {

struct Pipe {
  Fd read;
  Fd write;
};

Pipe makePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throwSystemError("pipe2", errno);
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throwSystemError("fcntl(O_NONBLOCK)", errno);
  }
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The child's side of spawnWorker(): async-signal-safe calls only (we forked a process whose
// allocator state we must not touch). Never returns.
[[noreturn]] void runChild(pid_t launcher, int devNull, int outW, int errW, int execW,
                           const sigset_t& childMask, const char* path, char* const* argv,
                           char* const* envp) {
  setpgid(0, 0);
  // Die with the launcher. The launcher may already be gone (then we were reparented): check.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher) _exit(125);
  // Fds 0..2 of the launcher are always open (main() ensures it), so all our fds are >= 3.
  if (dup2(devNull, STDIN_FILENO) < 0 || dup2(outW, STDOUT_FILENO) < 0 ||
      dup2(errW, STDERR_FILENO) < 0) {
    int err = errno;
    (void)!write(execW, &err, sizeof(err));
    _exit(126);
  }
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &childMask, nullptr);
  execve(path, argv, envp);
  int err = errno;
  (void)!write(execW, &err, sizeof(err));
  _exit(127);
}

}  // namespace

SpawnedProcess spawnWorker(const Command& cmd, const sigset_t& childMask) {
  Fd devNull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull.valid()) throwSystemError("open(/dev/null)", errno);
  Pipe out = makePipe();
  Pipe err = makePipe();
  Pipe exec = makePipe();
  std::vector<char*> argv = cStrings(cmd.argv);
  std::vector<char*> envp = cStrings(cmd.env);
  pid_t launcher = getpid();

  pid_t pid = fork();
  if (pid < 0) throwSystemError("fork", errno);
  if (pid == 0) {
    runChild(launcher, devNull.get(), out.write.get(), err.write.get(), exec.write.get(), childMask,
             cmd.path.c_str(), argv.data(), envp.data());
  }
  // Also from the parent, so the group exists before we might signal it (EACCES after the child
  // has exec'd is fine: it did it itself).
  setpgid(pid, pid);
  out.write.reset();
  err.write.reset();
  exec.write.reset();

  int childErr = 0;
  ssize_t n;
  do {
    n = read(exec.read.get(), &childErr, sizeof(childErr));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(childErr))) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw ExecError("cannot execute '" + (cmd.argv.empty() ? cmd.path : cmd.argv[0]) +
                        "': " + detail::errnoString(childErr),
                    childErr);
  }
  setNonBlocking(out.read.get());
  setNonBlocking(err.read.get());
  SpawnedProcess p;
  p.pid = pid;
  p.stdoutRead = std::move(out.read);
  p.stderrRead = std::move(err.read);
  return p;
}

ExitStatus ExitStatus::fromWaitStatus(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.exited = true;
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

std::string ExitStatus::describe() const {
  if (exited) return "exited with code " + std::to_string(code);
  return "killed by signal " + std::to_string(signal) + " (" + signalName(signal) + ")";
}

void signalWorker(pid_t pid, int sig) {
  if (pid <= 0) return;
  if (getpgid(pid) == pid) {
    if (killpg(pid, sig) == 0) return;
  }
  kill(pid, sig);
}

void signalGroup(pid_t pgid, int sig) {
  if (pgid > 0) killpg(pgid, sig);
}

std::vector<std::string> mergedEnvironment(const std::vector<std::string>& overrides) {
  auto keyOf = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || keyOf(o) == keyOf(kv);
    if (!replaced) env.push_back(std::move(kv));
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

int findFreePort() {
  Fd sock(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) throwSystemError("socket(AF_INET)", errno);
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  if (bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throwSystemError("bind(0.0.0.0:0) to find a free MASTER_PORT", errno);
  }
  socklen_t len = sizeof(addr);
  if (getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throwSystemError("getsockname", errno);
  }
  return ntohs(addr.sin_port);
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
