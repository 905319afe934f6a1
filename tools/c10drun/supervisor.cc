#include "tools/c10drun/supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <sstream>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kReapAfterKillTimeout{10000};
constexpr std::chrono::milliseconds kDrainTimeout{200};
constexpr size_t kReadChunk = 64 * 1024;

// Milliseconds until `deadline`, rounded up, at most `cap`, at least 0.
int msUntil(Clock::time_point deadline, int cap) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(0, std::min<long long>(left, cap)));
}

std::string formatSeconds(double s) {
  std::ostringstream ss;
  ss << s << " s";
  return ss.str();
}

}  // namespace

Supervisor::Supervisor(Options options, SignalEvents& signals, int outFd, int errFd)
    : options_(std::move(options)),
      secret_(decideJobSecret(options_)),
      signals_(signals),
      outFd_(outFd),
      errFd_(errFd) {
  if (!secret_.note.empty()) message(secret_.note);
}

void Supervisor::message(const std::string& text) {
  std::string line = "c10drun: " + text + "\n";
  writeAll(errFd_, line.data(), line.size());
}

std::vector<std::string> Supervisor::workerEnv(int localRank, const GroupSpec& spec,
                                               int port) const {
  const Options& o = options_;
  auto kv = [](const char* key, const std::string& v) { return std::string(key) + "=" + v; };
  auto num = [](long long v) { return std::to_string(v); };
  const long long rank = static_cast<long long>(spec.groupRank) * o.nprocPerNode + localRank;
  const long long worldSize = static_cast<long long>(spec.groupWorldSize) * o.nprocPerNode;
  std::vector<std::string> env = {
      kv("RANK", num(rank)),
      kv("LOCAL_RANK", num(localRank)),
      kv("WORLD_SIZE", num(worldSize)),
      kv("LOCAL_WORLD_SIZE", num(o.nprocPerNode)),
      kv("GROUP_RANK", num(spec.groupRank)),
      kv("GROUP_WORLD_SIZE", num(spec.groupWorldSize)),
      kv("ROLE_RANK", num(rank)),
      kv("ROLE_WORLD_SIZE", num(worldSize)),
      kv("ROLE_NAME", "default"),
      kv("MASTER_ADDR", spec.masterAddr),
      kv("MASTER_PORT", num(port)),
      kv("C10D_RESTART_COUNT", num(spec.restartCount)),
      kv("TORCHELASTIC_RESTART_COUNT", num(spec.restartCount)),
      kv("TORCHELASTIC_MAX_RESTARTS", num(o.maxRestarts)),
  };
  env.insert(env.end(), spec.extraEnv.begin(), spec.extraEnv.end());
  if (secret_.generated) env.push_back(kv(kStoreSecretEnv, *secret_.generated));
  // torchrun's habit: N workers each spawning a full OpenMP pool oversubscribes the node.
  if (o.nprocPerNode > 1 && getenv("OMP_NUM_THREADS") == nullptr) {
    env.push_back("OMP_NUM_THREADS=1");
  }
  return env;
}

void Supervisor::startGroup(const GroupSpec& spec) {
  stopping_ = false;
  failed_ = -1;
  workers_.clear();
  workers_.reserve(options_.nprocPerNode);
  int port = spec.masterPort != 0 ? spec.masterPort : findFreePort();
  std::vector<std::string> argv = {options_.program};
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  for (int local = 0; local < options_.nprocPerNode; ++local) {
    int rank = spec.groupRank * options_.nprocPerNode + local;
    std::string prefix = "[rank" + std::to_string(rank) + "]: ";
    Command cmd{options_.programPath, argv, mergedEnvironment(workerEnv(local, spec, port))};
    SpawnedProcess p = spawnWorker(cmd, signals_.childSigmask());
    workers_.push_back(Worker{local, rank, p.pid, true, ExitStatus{}, std::move(p.stdoutRead),
                              std::move(p.stderrRead), LinePrefixer(outFd_, prefix),
                              LinePrefixer(errFd_, prefix)});
  }
}

std::string Supervisor::failureText() const {
  if (failed_ < 0) return "no worker failed";
  const Worker& bad = workers_[failed_];
  return "rank " + std::to_string(bad.rank) + " (pid " + std::to_string(bad.pid) +
         ") failed: " + bad.status.describe();
}

int Supervisor::failureCode() const {
  if (failed_ < 0) return 1;
  const ExitStatus& st = workers_[failed_].status;
  return st.exited && st.code != 0 ? st.code : 1;
}

bool Supervisor::anyRunning() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
}

bool Supervisor::anyPipeOpen() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const Worker& w) { return w.out.valid() || w.err.valid(); });
}

void Supervisor::reap() {
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    if (!w.running) continue;
    int status = 0;
    pid_t r = waitpid(w.pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) continue;
    w.running = false;
    w.status = r == w.pid ? ExitStatus::fromWaitStatus(status) : ExitStatus{};
    if (!w.status.success() && !stopping_ && failed_ < 0) failed_ = static_cast<int>(i);
  }
}

void Supervisor::readStream(Fd& fd, LinePrefixer& prefixer) {
  char buf[kReadChunk];
  ssize_t n = read(fd.get(), buf, sizeof(buf));
  if (n > 0) {
    prefixer.feed(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    prefixer.finish();
    fd.reset();
  }
}

void Supervisor::drainAndClose(Fd& fd, LinePrefixer& prefixer) {
  // Whatever is buffered in the pipe (bounded by its capacity) up to EOF or EAGAIN (a straggler
  // still holds the write end), then close.
  char buf[kReadChunk];
  while (fd.valid()) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n > 0) {
      prefixer.feed(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  prefixer.finish();
  fd.reset();
}

void Supervisor::pollOnce(int timeoutMs) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Fd*, LinePrefixer*>> streams;
  fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
  for (Worker& w : workers_) {
    if (w.out.valid()) {
      fds.push_back(pollfd{w.out.get(), POLLIN, 0});
      streams.emplace_back(&w.out, &w.outPrefix);
    }
    if (w.err.valid()) {
      fds.push_back(pollfd{w.err.get(), POLLIN, 0});
      streams.emplace_back(&w.err, &w.errPrefix);
    }
  }
  int n = poll(fds.data(), fds.size(), timeoutMs);
  if (n > 0) {
    if (fds[0].revents != 0) {
      for (int sig : signals_.drain()) {
        if (!SignalEvents::isTermination(sig)) continue;  // SIGCHLD: reaped below
        ++signalCount_;
        if (signal_ == 0) signal_ = sig;
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) readStream(*streams[i - 1].first, *streams[i - 1].second);
    }
  }
  reap();
}

Supervisor::Outcome Supervisor::monitor(const std::function<bool()>& stopCheck) {
  for (;;) {
    if (signal_ != 0) return Outcome::kSignal;
    if (failed_ >= 0) return Outcome::kFailure;
    if (!anyRunning()) return Outcome::kSuccess;
    if (stopCheck && stopCheck()) return Outcome::kExternal;
    pollOnce(options_.monitorIntervalMs);
  }
}

void Supervisor::stopGroup(int sig) {
  stopping_ = true;
  for (Worker& w : workers_) {
    if (w.running) signalWorker(w.pid, sig);
  }
  auto grace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.gracePeriodS));
  Clock::time_point deadline = Clock::now() + grace;
  int signalsAtStart = signalCount_;
  while (anyRunning() && Clock::now() < deadline && signalCount_ == signalsAtStart) {
    pollOnce(msUntil(deadline, options_.monitorIntervalMs));
  }
  if (!anyRunning()) return;
  for (Worker& w : workers_) {
    if (!w.running) continue;
    if (signalCount_ == signalsAtStart) {
      message("rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) +
              ") still running " + formatSeconds(options_.gracePeriodS) + " after " +
              signalName(sig) + "; sending SIGKILL");
    }
    signalWorker(w.pid, SIGKILL);
  }
  Clock::time_point hardDeadline = Clock::now() + kReapAfterKillTimeout;
  while (anyRunning() && Clock::now() < hardDeadline) {
    pollOnce(msUntil(hardDeadline, options_.monitorIntervalMs));
  }
  for (Worker& w : workers_) {
    if (w.running) {
      message("rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) +
              ") did not die after SIGKILL; giving up on it");
    }
  }
}

void Supervisor::finishGroup() {
  Clock::time_point deadline = Clock::now() + kDrainTimeout;
  while (anyPipeOpen() && Clock::now() < deadline) {
    pollOnce(msUntil(deadline, options_.monitorIntervalMs));
  }
  for (Worker& w : workers_) {
    if (!w.running) signalGroup(w.pid, SIGKILL);  // stragglers of an exited worker
  }
  for (Worker& w : workers_) {
    drainAndClose(w.out, w.outPrefix);
    drainAndClose(w.err, w.errPrefix);
  }
  workers_.clear();
}

int Supervisor::run() {
  for (int restart = 0;; ++restart) {
    try {
      GroupSpec spec;
      spec.groupRank = options_.nodeRank;
      spec.groupWorldSize = options_.nnodes;
      spec.masterAddr = options_.masterAddr;
      spec.masterPort = options_.masterPort;
      spec.restartCount = restart;
      startGroup(spec);
    } catch (const ExecError& e) {
      message(e.what());
      stopGroup(SIGTERM);
      finishGroup();
      return kUsageExitCode;
    } catch (const Error& e) {  // fork or pipe failed: stop the workers already started
      message(std::string("error: starting workers: ") + e.what());
      stopGroup(SIGTERM);
      finishGroup();
      return 1;
    }
    Outcome outcome = monitor();
    if (outcome == Outcome::kSuccess) {
      finishGroup();
      return 0;
    }
    if (outcome == Outcome::kSignal) {
      int live = static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                                [](const Worker& w) { return w.running; }));
      message("received " + signalName(signal_) + "; forwarding it to " + std::to_string(live) +
              " worker(s)");
      stopGroup(signal_);
      finishGroup();
      return 128 + signal_;
    }
    message(failureText());
    const int code = failureCode();
    stopGroup(SIGTERM);
    finishGroup();
    if (signal_ != 0) {
      message("received " + signalName(signal_) + " while stopping workers; exiting");
      return 128 + signal_;
    }
    if (restart < options_.maxRestarts) {
      message("restarting the local worker group (restart " + std::to_string(restart + 1) + " of " +
              std::to_string(options_.maxRestarts) + ")");
      continue;
    }
    if (options_.maxRestarts > 0) {
      message("no restarts left (--max-restarts " + std::to_string(options_.maxRestarts) +
              "); exiting with code " + std::to_string(code));
    }
    return code;
  }
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
