#include "tests/netns/virtual_hosts.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("virtual hosts: " + what);
}

std::string errnoText(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

// The `ip` binary, by absolute path: sbin is often missing from a test's PATH.
const std::string& ipPath() {
  static const std::string path = [] {
    for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
      if (access(p, X_OK) == 0) return std::string(p);
    }
    return std::string();
  }();
  return path;
}

// Closes every descriptor >= 3 except `keep` (a forked helper must not hold the test's pipes and
// sockets open: a reader waiting for their EOF would wait for the helper).
void closeFdsExcept(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned lo = 3;
  for (int k : keep) {
    if (k < static_cast<int>(lo)) continue;
    if (static_cast<unsigned>(k) > lo)
      syscall(SYS_close_range, lo, static_cast<unsigned>(k) - 1, 0);
    lo = static_cast<unsigned>(k) + 1;
  }
  if (syscall(SYS_close_range, lo, ~0U, 0) != 0) {
    for (int fd = static_cast<int>(lo); fd < 4096; ++fd) close(fd);
  }
}

// Writes a line to the status pipe from a forked child (a single write: atomic below PIPE_BUF).
void say(int fd, const char* fmt, const char* arg = "", int err = 0) {
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), fmt, arg, err ? std::strerror(err) : "");
  if (n > 0) (void)!write(fd, buf, static_cast<size_t>(std::min<int>(n, sizeof(buf) - 1)));
}

// pid 1 of a host: sets the host up, says so, then reaps orphans until it is killed.
[[noreturn]] void hostInit(int out, const char* name, const char* hostsFile) {
  if (sethostname(name, std::strlen(name)) != 0) {
    say(out, "error sethostname(%s): %s\n", name, errno);
    _exit(1);
  }
  // Our mounts stay in this namespace (a shared "/" would propagate them to the machine's).
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    say(out, "error making / private%s: %s\n", "", errno);
    _exit(1);
  }
  // The host's own process table, shared memory and name table.
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    say(out, "error mounting /proc%s: %s\n", "", errno);
    _exit(1);
  }
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    say(out, "error mounting a tmpfs on /dev/shm%s: %s\n", "", errno);
    _exit(1);
  }
  if (hostsFile[0] != '\0' && mount(hostsFile, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    say(out, "error bind-mounting %s on /etc/hosts: %s\n", hostsFile, errno);
    _exit(1);
  }
  // /sys describing this network namespace (as `ip netns exec` does); optional.
  (void)umount2("/sys", MNT_DETACH);
  (void)mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  say(out, "ready%s%s\n");
  close(out);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  for (;;) {
    int status = 0;
    while (waitpid(-1, &status, WNOHANG) > 0) {
    }
    timespec ts{1, 0};
    sigtimedwait(&set, nullptr, &ts);
  }
}

bool startsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// Whether this machine lets root make the namespaces and a veth pair at all, in a forked child:
// empty when it does, else what it refused.
std::string capabilityRefused() {
  int fds[2];
  if (pipe(fds) != 0) return "";  // cannot tell: let the harness probe report it
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return "";
  }
  if (child == 0) {
    close(fds[0]);
    if (unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) != 0) {
      const int err = errno;
      (void)!write(fds[1], &err, sizeof(err));
      _exit(100);
    }
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execl(ipPath().c_str(), "ip", "link", "add", "c10dprobe0", "type", "veth", "peer", "name",
          "c10dprobe1", static_cast<char*>(nullptr));
    _exit(101);
  }
  close(fds[1]);
  int err = 0;
  const bool gotErr = read(fds[0], &err, sizeof(err)) == static_cast<ssize_t>(sizeof(err));
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) return "";
  if (WEXITSTATUS(status) == 100 && gotErr) {
    return "namespaces are refused here: unshare(net, uts, mount, pid, ipc): " + errnoText(err);
  }
  if (WEXITSTATUS(status) != 0) {
    return "veth pairs are refused here: `ip link add ... type veth` in a new network namespace "
           "exited with " +
           std::to_string(WEXITSTATUS(status));
  }
  return "";
}

struct NetnsProbe {
  std::string unavailable;  // a missing capability: the tests skip
  std::string harness;      // the harness failed where the capabilities are there: they fail
};

const NetnsProbe& netnsProbe() {
  static std::once_flag once;
  static NetnsProbe probe;
  std::call_once(once, [] {
    if (geteuid() != 0) {
      probe.unavailable =
          "virtual hosts need root (network, pid and mount namespaces; veth links); euid is " +
          std::to_string(geteuid());
      return;
    }
    if (ipPath().empty()) {
      probe.unavailable =
          "virtual hosts need iproute2's `ip` (not found in /usr/sbin, /sbin, /usr/bin, /bin)";
      return;
    }
    probe.unavailable = capabilityRefused();
    if (!probe.unavailable.empty()) return;
    try {
      VirtualHosts trial(1);
    } catch (const std::exception& e) {
      probe.harness = std::string("the virtual-hosts harness failed on a machine that has ") +
                      "namespaces and veth pairs (a harness or setup bug, not a missing " +
                      "capability): " + e.what();
    }
  });
  return probe;
}

}  // namespace

std::string netnsUnavailableReason() {
  return netnsProbe().unavailable;
}

std::string netnsHarnessError() {
  return netnsProbe().harness;
}

std::string HostResult::describe() const {
  std::ostringstream ss;
  ss << VirtualHosts::hostname(host) << " " << tag << ": ";
  if (timedOut) {
    ss << "hung (killed by the harness at the deadline, after " << seconds << " s)";
  } else if (exited) {
    ss << "exited with code " << exitCode;
  } else {
    ss << "killed by signal " << signal << " (" << strsignal(signal) << ")";
  }
  // The last lines are what explains a failure; keep the message readable.
  constexpr size_t kTail = 6000;
  ss << "; output" << (output.size() > kTail ? " (tail)" : "") << ":\n"
     << (output.size() > kTail ? output.substr(output.size() - kTail) : output);
  return ss.str();
}

std::string VirtualHosts::hostname(int host) {
  return "host" + std::to_string(host);
}

std::string VirtualHosts::address(int host) {
  return "10.213.0." + std::to_string(host + 1);
}

pid_t VirtualHosts::holderPid(int host) const {
  return hosts_.at(static_cast<size_t>(host)).initPid;
}

VirtualHosts::VirtualHosts(int hosts) {
  if (hosts < 1 || hosts > 8) fail("between 1 and 8 hosts, not " + std::to_string(hosts));
  if (ipPath().empty()) fail("iproute2's `ip` not found");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/c10d-netns-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) fail("mkdtemp(" + templ + "): " + errnoText(errno));
  dir_ = buf.data();
  try {
    const std::string hostsFile = dir_ + "/hosts";
    {
      std::ofstream f(hostsFile);
      f << "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
      for (int i = 0; i < hosts; ++i) f << address(i) << " " << hostname(i) << "\n";
      if (!f) fail("cannot write " + hostsFile);
    }
    switch_ = makeHolder("switch", "");
    for (int i = 0; i < hosts; ++i) hosts_.push_back(makeHolder(hostname(i), hostsFile));

    // The switch: a bridge, and one veth pair per host whose far end is the host's eth0.
    std::ostringstream sw;
    sw << "link set lo up\n"
       << "link add br0 type bridge forward_delay 0 stp_state 0\n"
       << "link set br0 up\n";
    for (int i = 0; i < hosts; ++i) {
      sw << "link add p" << i << " type veth peer name eth0 netns " << hosts_[i].initPid << "\n"
         << "link set p" << i << " master br0\n"
         << "link set p" << i << " up\n";
    }
    const std::string swBatch = dir_ + "/switch.ip";
    std::ofstream(swBatch) << sw.str();
    // net-only entry: `netns PID` above names the hosts' pid 1 in our numbering.
    checkIn(switch_, {ipPath(), "-batch", swBatch}, /*netOnly=*/true, std::chrono::seconds(10));
    for (int i = 0; i < hosts; ++i) {
      const std::string batch = dir_ + "/" + hostname(i) + ".ip";
      std::ofstream(batch) << "link set lo up\n"
                           << "addr add " << address(i) << "/24 dev eth0\n"
                           << "link set eth0 up\n";
      checkIn(hosts_[i], {ipPath(), "-batch", batch}, true, std::chrono::seconds(10));
    }
    // A veth end says LOWER_UP once both ends are up; the bridge forwards at once (no STP, no
    // forward delay). Wait for every eth0 to report it.
    for (int i = 0; i < hosts; ++i) {
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      for (;;) {
        std::string out = checkIn(hosts_[i], {ipPath(), "-o", "link", "show", "eth0"}, true,
                                  std::chrono::seconds(10));
        if (out.find("LOWER_UP") != std::string::npos) break;
        if (Clock::now() > deadline) fail(hostname(i) + ": eth0 not up after 10 s: " + out);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } catch (...) {
    teardown();
    throw;
  }
}

VirtualHosts::~VirtualHosts() {
  teardown();
}

VirtualHosts::Holder VirtualHosts::makeHolder(const std::string& name,
                                              const std::string& hostsFile) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe: " + errnoText(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t creator = getpid();
  const pid_t h = fork();
  if (h < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    fail("fork: " + errnoText(err));
  }
  if (h == 0) {
    // The holder: makes the namespaces, forks their pid 1, and lives as long as it does.
    const int out = fds[1];
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != creator) _exit(1);
    closeFdsExcept({out});
    if (unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) != 0) {
      say(out, "error unshare(net, uts, mount, pid, ipc)%s: %s\n", "", errno);
      _exit(1);
    }
    const pid_t holder = getpid();
    const pid_t init = fork();
    if (init < 0) {
      say(out, "error fork%s: %s\n", "", errno);
      _exit(1);
    }
    if (init == 0) {
      // getppid() is 0 here while the holder lives: it is outside our pid namespace.
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != 0) _exit(1);
      (void)holder;
      hostInit(out, name.c_str(), hostsFile.c_str());
    }
    char line[64];
    int n = std::snprintf(line, sizeof(line), "pid %d\n", static_cast<int>(init));
    (void)!write(out, line, static_cast<size_t>(n));
    close(out);
    int status = 0;
    while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(fds[1]);
  Holder holder;
  holder.pid = h;
  holder.name = name;
  // Until "pid N" (from the holder) and "ready" (from pid 1) or an error or EOF, 10 s at most.
  std::string got;
  std::string error;  // an "error ..." line from the holder or pid 1
  bool ready = false;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!ready || holder.initPid < 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fds[0], POLLIN, 0};
    const int r = left > 0 ? poll(&p, 1, static_cast<int>(left)) : 0;
    if (r < 0 && errno == EINTR) continue;
    char buf[512];
    const ssize_t k = r > 0 ? read(fds[0], buf, sizeof(buf)) : 0;
    if (k <= 0) break;
    got.append(buf, static_cast<size_t>(k));
    size_t nl;
    while ((nl = got.find('\n')) != std::string::npos) {
      std::string line = got.substr(0, nl);
      got.erase(0, nl + 1);
      if (startsWith(line, "pid ")) holder.initPid = std::atoi(line.c_str() + 4);
      if (line == "ready") ready = true;
      if (startsWith(line, "error ") && error.empty()) error = line.substr(6);
    }
    if (!error.empty()) break;
  }
  close(fds[0]);
  if (!ready || holder.initPid < 0) {
    ::kill(h, SIGKILL);
    if (holder.initPid > 0) ::kill(holder.initPid, SIGKILL);
    waitpid(h, nullptr, 0);
    fail(name + ": " + (!error.empty() ? error : "the namespaces' holder ended or hung"));
  }
  return holder;
}

VirtualHosts::Process VirtualHosts::start(const HostCommand& cmd) {
  if (cmd.host < 0 || cmd.host >= size())
    fail("host " + std::to_string(cmd.host) + " does not exist (" + std::to_string(size()) +
         " hosts)");
  return startIn(hosts_[cmd.host], cmd.host, cmd, /*netOnly=*/false);
}

VirtualHosts::Process VirtualHosts::startIn(const Holder& h, int host, const HostCommand& cmd,
                                            bool netOnly) {
  if (cmd.argv.empty()) fail("empty command for " + h.name);
  Process p;
  p.host = host;
  p.tag = cmd.tag.empty() ? cmd.argv[0] : cmd.tag;
  p.outputPath = dir_ + "/out-" + std::to_string(outputs_++);
  const int outFd = open(p.outputPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (outFd < 0) fail("open(" + p.outputPath + "): " + errnoText(errno));
  // Everything the child needs, prepared before fork.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && cmd.env.count(kv.substr(0, eq))) continue;
    env.push_back(kv);
  }
  for (const auto& kv : cmd.env) env.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) std::strcpy(cwd, "/");
  const std::string nsDir = "/proc/" + std::to_string(h.initPid) + "/ns/";
  const char* kinds[] = {"ipc", "uts", "net", "pid", "mnt"};
  std::vector<std::string> nsPaths;
  for (const char* k : kinds) {
    if (!netOnly || std::strcmp(k, "net") == 0) nsPaths.push_back(nsDir + k);
  }

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t creator = getpid();
  const pid_t c = fork();
  if (c < 0) {
    const int err = errno;
    close(outFd);
    fail("fork: " + errnoText(err));
  }
  if (c == 0) {
    // Enters the host, then forks the command (a pid namespace takes only new children).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != creator) _exit(126);
    closeFdsExcept({outFd});
    std::vector<int> nsFds;
    for (const auto& path : nsPaths) {
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        say(outFd, "virtual hosts: open(%s): %s\n", path.c_str(), errno);
        _exit(126);
      }
      nsFds.push_back(fd);
    }
    for (size_t i = 0; i < nsFds.size(); ++i) {
      if (setns(nsFds[i], 0) != 0) {
        say(outFd, "virtual hosts: setns(%s): %s\n", nsPaths[i].c_str(), errno);
        _exit(126);
      }
      close(nsFds[i]);
    }
    if (chdir(cwd) != 0 && chdir("/") != 0) _exit(126);
    const pid_t self = getpid();
    const pid_t d = fork();
    if (d < 0) _exit(126);
    if (d == 0) {
      // Outside a pid namespace our parent is `self`; inside, it is numbered 0 (an ancestor's).
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (netOnly ? self : 0)) _exit(126);
      setsid();
      const int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
      dup2(outFd, 1);
      dup2(outFd, 2);
      execvpe(argv[0], argv.data(), envp.data());
      say(2, "virtual hosts: cannot execute %s: %s\n", argv[0], errno);
      _exit(127);
    }
    close(outFd);
    int status = 0;
    while (waitpid(d, &status, 0) < 0) {
      if (errno != EINTR) _exit(126);
    }
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    // Mirror the signal (PR_SET_PDEATHSIG is ours only while the creator lives: fine, it does).
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, 0);
    ::kill(getpid(), sig);
    _exit(128 + sig);
  }
  close(outFd);
  p.pid = c;
  p.started = Clock::now();
  live_.push_back(c);
  return p;
}

HostResult VirtualHosts::wait(Process& p, Clock::time_point deadline) {
  HostResult r;
  r.host = p.host;
  r.tag = p.tag;
  if (p.pid <= 0) fail("wait on a process that was not started or was already waited for");
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(p.pid, &status, WNOHANG);
    if (got == p.pid) break;
    if (got < 0 && errno != EINTR)
      fail("waitpid(" + std::to_string(p.pid) + "): " + errnoText(errno));
    if (Clock::now() > deadline) {
      ::kill(p.pid, SIGKILL);
      waitpid(p.pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - p.started).count();
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  live_.erase(std::remove(live_.begin(), live_.end(), p.pid), live_.end());
  p.pid = -1;
  r.output = readFile(p.outputPath);
  return r;
}

void VirtualHosts::kill(const Process& p) {
  if (p.pid > 0) ::kill(p.pid, SIGKILL);
}

std::vector<HostResult> VirtualHosts::runAll(const std::vector<HostCommand>& cmds,
                                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<Process> procs;
  try {
    for (const auto& c : cmds) procs.push_back(start(c));
  } catch (...) {
    for (auto& p : procs) {
      kill(p);
      wait(p, Clock::now());
    }
    throw;
  }
  std::vector<HostResult> out;
  for (auto& p : procs) out.push_back(wait(p, deadline));
  return out;
}

std::string VirtualHosts::checkIn(const Holder& h, const std::vector<std::string>& argv,
                                  bool netOnly, std::chrono::milliseconds timeout) {
  HostCommand cmd;
  cmd.argv = argv;
  Process p = startIn(h, -1, cmd, netOnly);
  HostResult r = wait(p, Clock::now() + timeout);
  r.host = -1;
  if (!r.ok()) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    fail(h.name + ": `" + line + "` failed: " + r.describe());
  }
  return r.output;
}

std::string VirtualHosts::check(int host, const std::vector<std::string>& argv,
                                std::chrono::milliseconds timeout) {
  if (host < 0 || host >= size()) fail("host " + std::to_string(host) + " does not exist");
  return checkIn(hosts_[host], argv, false, timeout);
}

void VirtualHosts::setLink(int host, bool up) {
  if (host < 0 || host >= size()) fail("host " + std::to_string(host) + " does not exist");
  checkIn(hosts_[host], {ipPath(), "link", "set", "eth0", up ? "up" : "down"}, true,
          std::chrono::seconds(10));
}

void VirtualHosts::teardown() {
  // Killing a pid 1 kills every process of its namespace; the holder (our child) then reaps it
  // and exits; the namespaces and their links go with the last process in them.
  std::vector<Holder*> all;
  for (auto& h : hosts_) all.push_back(&h);
  all.push_back(&switch_);
  for (Holder* h : all) {
    if (h->initPid > 0) ::kill(h->initPid, SIGKILL);
  }
  for (Holder* h : all) {
    if (h->pid <= 0) continue;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(h->pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(h->pid, SIGKILL);
        waitpid(h->pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    h->pid = -1;
    h->initPid = -1;
  }
  hosts_.clear();
  // Commands never waited for: their host is gone, so they are ending; reap them.
  for (pid_t c : live_) {
    ::kill(c, SIGKILL);
    waitpid(c, nullptr, 0);
  }
  live_.clear();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
