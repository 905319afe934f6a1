// Fault-injection suite: the harness's side of an injection, the expectations and the table (see
// fault_injection.h).
#include "tests/faults/fault_injection.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <new>
#include <random>
#include <sstream>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/store/tcp/tcp_store_server.h"
#include "tests/common/multiproc.h"
#include "tests/faults/fault_shared.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

using detail::kDone;
using detail::kReady;
using detail::kReported;
using detail::nowNs;
using detail::SharedPage;
using detail::survives;
using detail::waitFor;
using std::chrono::milliseconds;

namespace {

// The "rank N" numbers a message names.
std::vector<int> ranksNamed(const std::string& msg) {
  std::vector<int> out;
  for (size_t at = msg.find("rank "); at != std::string::npos; at = msg.find("rank ", at + 5)) {
    size_t end = at + 5;
    while (end < msg.size() && std::isdigit(static_cast<unsigned char>(msg[end]))) ++end;
    if (end > at + 5) out.push_back(std::stoi(msg.substr(at + 5, end - at - 5)));
  }
  return out;
}

// /dev/shm entries made by the verbs shm transport of a process in `pids`.
std::vector<std::string> jobShmEntries(const std::vector<int>& pids) {
  std::vector<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (int pid : pids) {
      if (pid > 0 && name.rfind("c10d-verbs-" + std::to_string(pid) + "-", 0) == 0)
        out.push_back(name);
    }
  }
  closedir(d);
  return out;
}

// The MAP_SHARED page, unmapped on scope exit.
class SharedMapping {
 public:
  SharedMapping() {
    void* p = mmap(nullptr, sizeof(SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("runInjection: mmap of the shared page failed");
    page_ = new (p) SharedPage();
  }
  ~SharedMapping() {
    page_->~SharedPage();
    munmap(page_, sizeof(SharedPage));
  }
  SharedPage& operator*() const { return *page_; }

 private:
  SharedPage* page_;
};

// The store server in its own process; writes its port (or -1) into the shared page and lives
// until SIGKILLed or its parent is gone.
pid_t startStoreServer(SharedPage& sh) {
  const pid_t parent = getpid();
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  try {
    TCPStoreServerOptions o;
    o.bindAddress = "127.0.0.1";
    o.port = 0;
    o.secret = "";
    TCPStoreServer server(o);
    sh.storePort.store(server.port());
    while (getppid() == parent) std::this_thread::sleep_for(milliseconds(50));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault harness: store server failed: %s\n", e.what());
    sh.storePort.store(-1);
  }
  _exit(0);
}

void reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

// kShmUnlink: unlinks the job's workspace `delayUs` after it appears in /dev/shm.
void injectShmUnlink(const Injection& inj, SharedPage& sh, const std::vector<int>& pids,
                     InjectionResult& res) {
  const auto give_up = std::chrono::steady_clock::now() + inj.setupTimeout;
  for (;;) {
    const std::vector<std::string> seen = jobShmEntries({pids[0]});
    if (!seen.empty()) {
      std::this_thread::sleep_for(std::chrono::microseconds(inj.delayUs));
      const int64_t t = nowNs();
      if (shm_unlink(("/" + seen[0]).c_str()) == 0) {
        sh.injectNs.store(t);
        res.injected = true;
        res.injectNote = "unlinked /dev/shm/" + seen[0];
      } else {
        res.injectNote = "the ranks unlinked /dev/shm/" + seen[0] + " first (every rank mapped it)";
      }
      break;
    }
    bool allUp = true;
    for (int r = 0; r < inj.worldSize; ++r) allUp = allUp && sh.ranks[r].phase.load() >= kReady;
    if (allUp || std::chrono::steady_clock::now() > give_up) {
      res.injectNote = "the workspace was gone before the harness saw it";
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // Ranks that finished setup wait for this before their last ops.
  if (sh.injectNs.load() == 0) sh.injectNs.store(nowNs());
}

void inject(const Injection& inj, SharedPage& sh, const std::vector<int>& pids, pid_t storePid,
            InjectionResult& res) {
  if (inj.fault == Fault::kShmUnlink) return injectShmUnlink(inj, sh, pids, res);
  // A rank fault waits for its victim to reach the op; a store kill for every rank (a rank still
  // in setup would lose the store it rendezvouses through, which is another fault: CI saw rank 0
  // at op 0 while rank 1 still waited for the host keys).
  std::vector<int> watched;
  if (inj.fault == Fault::kStoreKill) {
    for (int r = 0; r < inj.worldSize; ++r) watched.push_back(r);
  } else {
    watched.push_back(inj.victim);
  }
  for (const int at : watched) {
    detail::RankSlot& v = sh.ranks[at];
    if (!waitFor([&] { return v.opIndex.load() >= inj.atOp || v.phase.load() >= kReported; },
                 inj.setupTimeout + milliseconds(10000)) ||
        v.opIndex.load() < inj.atOp) {
      res.injectNote = "rank " + std::to_string(at) + " never reached op " +
                       std::to_string(inj.atOp) + " (" + v.outcome + ")";
      return;
    }
  }
  if (inj.fault == Fault::kCloseConnection) {
    // The victim closes its connection itself (fault_rank.cc); the harness only records it.
    waitFor([&] { return sh.injectNs.load() != 0; }, milliseconds(10000));
    res.injected = sh.injectNs.load() != 0;
    res.injectNote = "rank " + std::to_string(inj.victim) + " shut down its connection to rank " +
                     std::to_string(inj.peer);
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(inj.delayUs));
  sh.injectNs.store(nowNs());
  res.injected = true;
  switch (inj.fault) {
    case Fault::kSigkill:
      kill(pids[inj.victim], SIGKILL);
      break;
    case Fault::kSigstop:
      kill(pids[inj.victim], SIGSTOP);
      // The check is the survivors'; the stopped rank goes once they reported (or gave up).
      waitFor(
          [&] {
            for (int r = 0; r < inj.worldSize; ++r)
              if (survives(inj, r) && sh.ranks[r].phase.load() < kReported) return false;
            return true;
          },
          inj.opTimeout + milliseconds(10000));
      kill(pids[inj.victim], SIGKILL);
      break;
    case Fault::kStoreKill:
      reap(storePid);
      break;
    default:
      break;
  }
}

}  // namespace

const char* faultName(Fault f) {
  switch (f) {
    case Fault::kSigkill:
      return "SIGKILL rank";
    case Fault::kSigstop:
      return "SIGSTOP rank";
    case Fault::kStoreKill:
      return "store killed";
    case Fault::kCloseConnection:
      return "connection closed";
    case Fault::kShmUnlink:
      return "shm unlinked";
  }
  return "?";
}

bool faultApplies(Fault f, const BackendParam& bp) {
  const bool verbs = bp.backend == "verbs" && bp.device.isCPU();
  const auto t = bp.config.find("C10D_TRANSPORT");
  const std::string transport = t == bp.config.end() ? "shm" : t->second;
  if (f == Fault::kCloseConnection) return verbs && transport == "tcp";
  if (f == Fault::kShmUnlink) return verbs && transport == "shm";
  return bp.device.isCPU();
}

namespace {

// How long after the op (or setup) timeout a survivor's error may come. The runtime reports within
// about 1 s (its desync exchange); the rest is margin for a loaded 2-core machine, far below a
// hang.
constexpr double kErrorSlackMs = 2500;

uint64_t runSeed() {
  static const uint64_t seed = [] {
    std::random_device rd;
    return ((static_cast<uint64_t>(rd()) << 32) | rd()) % 1'000'000'000ull;
  }();
  return seed;
}

const char* seedOverride() {
  const char* v = std::getenv("C10D_FAULT_SEED");
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

uint64_t faultSeedBase(const std::string& caseName) {
  if (const char* v = seedOverride()) return std::strtoull(v, nullptr, 10);
  uint32_t h = 2166136261u;  // FNV-1a
  for (char ch : caseName) h = (h ^ static_cast<uint8_t>(ch)) * 16777619u;
  return runSeed() + h;
}

std::string runSeedNote() {
  if (const char* v = seedOverride())
    return ::c10d::detail::str("fault seeds from C10D_FAULT_SEED=", v);
  return ::c10d::detail::str(
      "fault seeds of this run: ", runSeed(),
      " + a hash of each case; replay an injection with C10D_FAULT_SEED=<its seed> "
      "C10D_FAULT_INJECTIONS=1 and --gtest_filter on its case");
}

std::string Injection::describe() const {
  std::ostringstream ss;
  ss << faultName(fault) << " on " << backend.label() << ", " << worldSize << " ranks, "
     << collectiveName(collective) << " x" << count << ", victim " << victim;
  if (peer >= 0) ss << " (peer " << peer << ")";
  ss << ", op " << atOp << " + " << delayUs << " us, timeout " << opTimeout.count() << " ms, seed "
     << seed;
  return ss.str();
}

Injection randomInjection(Fault f, const BackendParam& bp, uint64_t seed, int minWorld,
                          int maxWorld, int maxAtOp, size_t maxCount) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) {  // [lo, hi]
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  Injection inj;
  inj.fault = f;
  inj.backend = bp;
  inj.seed = seed;
  inj.worldSize = uniform(minWorld, maxWorld);
  inj.collective = static_cast<Collective>(uniform(0, kNumCollectives - 1));
  const double logMax = std::log(static_cast<double>(std::max<size_t>(maxCount, 1)));
  inj.count = static_cast<size_t>(std::exp(std::uniform_real_distribution<double>(0, logMax)(rng)));
  inj.count = std::max<size_t>(1, std::min(inj.count, maxCount));
  inj.victim = uniform(0, inj.worldSize - 1);
  // A partner the victim talks to in most algorithms: recursive doubling's first step, and a ring
  // neighbour.
  if (f == Fault::kCloseConnection)
    inj.peer = (inj.victim ^ 1) < inj.worldSize ? inj.victim ^ 1 : inj.victim - 1;
  if (f == Fault::kStoreKill || f == Fault::kShmUnlink) inj.victim = -1;
  inj.atOp = uniform(0, std::max(0, maxAtOp - 1));
  inj.delayUs = uniform(0, 2999);
  if (f == Fault::kShmUnlink) inj.setupTimeout = milliseconds(4000);
  return inj;
}

InjectionResult runInjection(const Injection& inj) {
  InjectionResult res;
  res.injection = inj;
  const auto start = std::chrono::steady_clock::now();
  SharedMapping mapping;
  SharedPage& sh = *mapping;
  const pid_t storePid = startStoreServer(sh);
  if (!waitFor([&] { return sh.storePort.load() != 0; }, milliseconds(20000)) ||
      sh.storePort.load() < 0) {
    reap(storePid);
    res.injectNote = "the store server did not start";
    return res;
  }
  std::vector<int> pids;
  MultiProcOptions opts;
  // Setup, ops up to the fault, the op timeout, the survivors' wait for each other, teardown.
  opts.timeout = inj.setupTimeout + milliseconds(10000) + 3 * inj.opTimeout + milliseconds(15000);
  opts.afterFork = [&](const std::vector<int>& p) {
    pids = p;
    inject(inj, sh, p, storePid, res);
  };
  const std::vector<RankResult> ranks = runRanks(
      inj.worldSize, [&](int rank, int) { detail::rankMain(inj, sh, rank); }, opts);
  reap(storePid);

  const int64_t injectNs = sh.injectNs.load();
  for (int r = 0; r < inj.worldSize; ++r) {
    if (!survives(inj, r)) continue;
    const detail::RankSlot& s = sh.ranks[r];
    SurvivorReport rep;
    rep.rank = r;
    const int phase = s.phase.load();
    if (ranks[r].timedOut) {
      rep.outcome = "hung";
      ++res.hangs;
    } else if (phase < kReported) {
      rep.outcome = "no report";
      rep.message = ranks[r].describe();
      ++res.hangs;
    } else {
      rep.outcome = s.outcome;
    }
    if (phase >= kReported) {
      rep.message = s.message;
      rep.opName = s.opName;
      rep.failedOp = s.failedOp;
      rep.seq = s.seq;
      if (s.errNs != 0) {
        const int64_t from = std::max(injectNs, s.issueNs);
        rep.latencyMs = static_cast<double>(s.errNs - from) / 1e6;
      }
      rep.namesOpSeq = rep.message.find(rep.opName + " #" + std::to_string(rep.seq) +
                                        " in group ") != std::string::npos;
      const std::vector<int> named = ranksNamed(rep.message);
      rep.namesVictim =
          inj.victim >= 0 && std::find(named.begin(), named.end(), inj.victim) != named.end();
      if (rep.outcome.rfind("setup:", 0) == 0) res.setupFailed = true;
    }
    rep.fdsBefore = s.fdsBefore;
    if (phase >= kDone) {
      rep.fdsAfter = s.fdsAfter;
      if (rep.fdsAfter > rep.fdsBefore) ++res.fdLeaks;
    }
    res.survivors.push_back(rep);
  }
  res.shmLeft = jobShmEntries(pids);
  res.shmLeaks = static_cast<int>(res.shmLeft.size());
  for (const std::string& name : res.shmLeft) shm_unlink(("/" + name).c_str());
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

std::vector<std::string> expectationFailures(const InjectionResult& r) {
  const Injection& inj = r.injection;
  std::vector<std::string> out;
  auto fail = [&out](const std::string& s) { out.push_back(s); };
  if (r.hangs > 0) fail(std::to_string(r.hangs) + " survivor(s) hung");
  if (r.fdLeaks > 0) fail(std::to_string(r.fdLeaks) + " survivor(s) leaked file descriptors");
  if (r.shmLeaks > 0) fail(std::to_string(r.shmLeaks) + " /dev/shm entries left");
  const bool mustFail = inj.fault == Fault::kSigkill || inj.fault == Fault::kSigstop ||
                        inj.fault == Fault::kCloseConnection;
  if (mustFail && !r.injected) fail("not injected: " + r.injectNote);
  const double limitMs = static_cast<double>(inj.opTimeout.count()) + kErrorSlackMs;
  for (const SurvivorReport& s : r.survivors) {
    const std::string who = "rank " + std::to_string(s.rank) + ": ";
    const bool error =
        s.outcome == "CommError" || s.outcome == "TimeoutError" || s.outcome == "Error";
    if (s.outcome == "hung" || s.outcome == "no report") continue;  // counted above
    if (s.outcome == "wrong result") {
      fail(who + "wrong result: " + s.message);
      continue;
    }
    std::ostringstream late;
    late << who << s.outcome << " after " << std::fixed << std::setprecision(0) << s.latencyMs
         << " ms, past the limit of ";
    switch (inj.fault) {
      case Fault::kSigkill:
      case Fault::kSigstop:
      case Fault::kCloseConnection:
        if (!error) {
          fail(who + s.outcome + " instead of an error" +
               (s.message.empty() ? "" : ": " + s.message));
          break;
        }
        if (s.latencyMs > limitMs) fail(late.str() + std::to_string(int(limitMs)) + " ms");
        if (!s.namesOpSeq)
          fail(who + "the error does not name " + s.opName + " #" + std::to_string(s.seq) + ": " +
               s.message);
        // On gloo the killed rank is not asserted (recorded in the table): a survivor whose
        // connection another survivor closed on its way out names that survivor, and one timing
        // out on another survivor relies on the desync report. Every connection lost names a
        // rank there too, though.
        if (inj.fault == Fault::kSigkill && !s.namesVictim && inj.backend.backend != "gloo")
          fail(who + "the error does not name the killed rank " + std::to_string(inj.victim) +
               ": " + s.message);
        if (s.outcome == "CommError" &&
            s.message.find("lost its connection to a peer") != std::string::npos)
          fail(who + "the lost connection names no rank: " + s.message);
        break;
      case Fault::kStoreKill:
        if (s.opName != "monitoredBarrier" || !error) {
          fail(who + "expected every collective to succeed and monitoredBarrier to fail, got " +
               s.outcome + " in " + s.opName + ": " + s.message);
          break;
        }
        if (s.latencyMs > limitMs) fail(late.str() + std::to_string(int(limitMs)) + " ms");
        if (s.message.find("TCPStore at 127.0.0.1:") == std::string::npos)
          fail(who + "the error does not name the store: " + s.message);
        break;
      case Fault::kShmUnlink:
        if (r.setupFailed) {
          if (!error && s.outcome.rfind("setup:", 0) != 0) {
            fail(who + "setup failed on another rank, this one got " + s.outcome);
          } else if (s.latencyMs > static_cast<double>(inj.setupTimeout.count()) + kErrorSlackMs) {
            fail(late.str() + std::to_string(inj.setupTimeout.count() + int(kErrorSlackMs)) +
                 " ms");
          }
        } else if (s.outcome != "completed") {
          fail(who + "the workspace was unlinked after setup (a no-op), yet: " + s.outcome + ": " +
               s.message);
        }
        break;
    }
  }
  return out;
}

void FaultTable::add(const InjectionResult& r) {
  Cell& c = cells_[{static_cast<int>(r.injection.fault), r.injection.backend.label()}];
  const double limitMs = static_cast<double>(r.injection.opTimeout.count()) + kErrorSlackMs;
  ++(r.injected ? c.injections : c.notInjected);
  if (r.setupFailed) ++c.setupFailures;
  c.hangs += r.hangs;
  c.leaks += r.fdLeaks + r.shmLeaks;
  if (!expectationFailures(r).empty()) ++c.failures;
  for (const SurvivorReport& s : r.survivors) {
    ++c.survivors;
    const bool error = s.outcome == "CommError" || s.outcome == "TimeoutError" ||
                       s.outcome == "Error" || s.outcome.rfind("setup:", 0) == 0;
    if (s.outcome == "completed") ++c.completed;
    if (error &&
        s.latencyMs <= (r.injection.fault == Fault::kShmUnlink
                            ? static_cast<double>(r.injection.setupTimeout.count()) + kErrorSlackMs
                            : limitMs))
      ++c.errorsInTime;
    // What the error must name: the op and its seq; the store; the workspace (or, for ranks that
    // got through setup, their op and seq).
    const Fault f = r.injection.fault;
    const bool named = f == Fault::kStoreKill
                           ? s.message.find("TCPStore at 127.0.0.1:") != std::string::npos
                       : f == Fault::kShmUnlink
                           ? s.namesOpSeq || s.message.find("/c10d-verbs-") != std::string::npos
                           : s.namesOpSeq;
    if (error && named) ++c.namedOpSeq;
    if (error && s.namesVictim) ++c.namedVictim;
    if (error) c.maxLatencyMs = std::max(c.maxLatencyMs, s.latencyMs);
  }
}

std::string FaultTable::markdown() const {
  std::ostringstream ss;
  ss << "| fault | backend | injected | not injected | survivors | errors in time | "
        "named (op+seq / store / segment) | victim named | ops unaffected | setup failed | hangs | "
        "leaks | slowest error (ms) | "
        "failed checks |\n";
  ss << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, c] : cells_) {
    ss << "| " << faultName(static_cast<Fault>(key.first)) << " | " << key.second << " | "
       << c.injections << " | " << c.notInjected << " | " << c.survivors << " | " << c.errorsInTime
       << " | " << c.namedOpSeq << " | " << c.namedVictim << " | " << c.completed << " | "
       << c.setupFailures << " | " << c.hangs << " | " << c.leaks << " | " << std::fixed
       << std::setprecision(0) << c.maxLatencyMs << " | " << c.failures << " |\n";
  }
  return ss.str();
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
