// Fault-injection suite (issue 13, part 3): break a running job in one of five ways at a random
// point of a random collective, on a real multi-process job, and check what every surviving rank
// sees.
//
// One injection (runInjection):
//   - a TCPStore server in its own forked process (so it can be killed alone), `worldSize` forked
//     ranks that build a group of the backend through the registry over a TCPStore client, then
//     run one collective (Injection::collective) over and over, each op with `opTimeout`, checking
//     every result against a reference;
//   - when rank `victim` has issued op `atOp`, `delayUs` later, the fault:
//       kSigkill          the victim is SIGKILLed;
//       kSigstop          the victim is SIGSTOPped, and SIGKILLed once every survivor reported;
//       kStoreKill        the store server's process is SIGKILLed: collectives need no store, so
//                         ops keep succeeding; the next store-backed call (monitoredBarrier) must
//                         fail naming the store;
//       kCloseConnection  verbs/tcp only: the victim shuts down its connection to one peer
//                         (verbs::closeConnectionForTesting); nobody dies;
//       kShmUnlink        verbs/shm only: the harness unlinks the job's /dev/shm workspace while
//                         the group is set up, `delayUs` after it appears (the runtime unlinks it
//                         itself once every rank mapped it: later, the fault is a no-op);
//   - every survivor records, in memory shared with the harness, how its op ended: the exception
//     type and message, when (CLOCK_MONOTONIC, comparable across processes), the op's index and
//     sequence number, its fd count before building the group and after destroying it; it keeps
//     its group until every survivor reported, so no survivor's error is a cascade from another
//     survivor leaving;
//   - the harness kills whatever is left at a hard deadline (counted as hangs), then counts the
//     job's /dev/shm entries (leaks, then removed).
//
// expectationFailures() says what the runtime must guarantee for the fault (see its comment);
// FaultTable aggregates injections into the fault x backend table the tests print.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/faults/fault_ops.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

enum class Fault { kSigkill, kSigstop, kStoreKill, kCloseConnection, kShmUnlink };
constexpr int kNumFaults = 5;
const char* faultName(Fault f);

// Whether `f` can be injected on `bp` (close: verbs over tcp; unlink: verbs over shm).
bool faultApplies(Fault f, const BackendParam& bp);

struct Injection {
  Fault fault = Fault::kSigkill;
  BackendParam backend;
  int worldSize = 2;
  Collective collective = Collective::kAllreduce;
  size_t count = 1;  // elements per rank
  int victim = 0;    // killed / stopped / closing rank (store, unlink: none, -1)
  int peer = -1;     // kCloseConnection: whose connection the victim closes
  int atOp = 0;      // the victim's op index at which the fault is injected
  int delayUs = 0;   // after the victim issued op atOp (kShmUnlink: after the segment appears)
  uint64_t seed = 0;
  Milliseconds opTimeout{2000};
  // Building the group (TCPStore client and backend setup); kShmUnlink fails there.
  Milliseconds setupTimeout{30000};
  std::string describe() const;  // one line with every parameter (and the seed to replay it)
};

// The seed of a case's first injection (the others follow it: +1, +2, ...). C10D_FAULT_SEED when
// set, to replay a seed a run printed; otherwise this run's seed (drawn once per process and
// printed by runSeedNote()) mixed with `caseName`, so every run tries new injections and every
// case its own.
uint64_t faultSeedBase(const std::string& caseName);
// "fault seeds of this run: ..." with how to replay one, for the start of a test's output.
std::string runSeedNote();

// Draws an injection of `f` on `bp` from `seed`: world size in [minWorld, maxWorld], collective,
// count (1 to maxCount, log-uniform), victim, op index in [0, maxAtOp), delay in [0, 3 ms);
// kShmUnlink: a 4 s setup timeout (its failures end there).
Injection randomInjection(Fault f, const BackendParam& bp, uint64_t seed, int minWorld,
                          int maxWorld, int maxAtOp, size_t maxCount);

struct SurvivorReport {
  int rank = -1;
  std::string outcome;    // "CommError", "TimeoutError", "Error", "completed", "setup:<type>",
                          // "wrong result", "hung", "no report"
  std::string message;    // the exception's message, or the mismatch
  double latencyMs = -1;  // error time - max(fault time, the failing op's issue time)
  int failedOp = -1;      // op index (-1: setup or none)
  uint64_t seq = 0;
  std::string opName;        // "allreduce", "monitoredBarrier", "setup"
  bool namesOpSeq = false;   // message has "<op> #<seq> in group <name>"
  bool namesVictim = false;  // message has "rank <victim>"
  int fdsBefore = -1, fdsAfter = -1;
};

struct InjectionResult {
  Injection injection;
  bool injected = false;   // the fault happened (kShmUnlink: the segment was still there)
  std::string injectNote;  // why not, or what the fault hit
  std::vector<SurvivorReport> survivors;
  int hangs = 0;     // survivors killed at the hard deadline or that never reported
  int fdLeaks = 0;   // survivors whose fd count grew
  int shmLeaks = 0;  // /dev/shm entries of the job left at the end
  std::vector<std::string> shmLeft;
  bool setupFailed = false;  // some survivor failed while building the group (kShmUnlink)
  double seconds = 0;
};

InjectionResult runInjection(const Injection& inj);

// What the runtime guarantees today, per fault; empty when the injection met all of it:
//   every fault: no hang, no leaked fd or /dev/shm entry, no wrong result;
//   kSigkill, kSigstop, kCloseConnection: every survivor fails an op with CommError /
//     TimeoutError / Error within the op timeout + 1 s of max(fault, the op's issue), naming the
//     op and its sequence number ("allreduce #7 in group verbs:world"); kSigkill on verbs:
//     naming the killed rank too (gloo: recorded only; see fault_injection.cc);
//   kStoreKill: every op succeeds; monitoredBarrier then fails within its timeout + 1 s with an
//     error naming the store (TCPStore at host:port);
//   kShmUnlink: either setup failed on every rank within the setup timeout + 1 s, or (unlinked
//     after every rank mapped it) every op succeeded.
std::vector<std::string> expectationFailures(const InjectionResult& r);

// Fault x backend: injections, survivors, errors in time, errors naming what they must (op and
// seq; the store; the shm workspace), naming the victim (killed / stopped / closing rank),
// survivors whose ops all succeeded, setup failures, hangs, leaks, the slowest error, injections
// failing expectationFailures(); markdown() writes it as a table.
class FaultTable {
 public:
  void add(const InjectionResult& r);
  std::string markdown() const;

 private:
  struct Cell {
    int injections = 0, notInjected = 0, survivors = 0, errorsInTime = 0, namedOpSeq = 0,
        namedVictim = 0, completed = 0, setupFailures = 0, hangs = 0, leaks = 0, failures = 0;
    double maxLatencyMs = 0;
  };
  std::map<std::pair<int, std::string>, Cell> cells_;
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
