// Fault-injection suite: one rank's side of an injection (see fault_injection.h).
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "c10d/backends/verbs/fault_hooks.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/tcp/tcp_store.h"
#include "tests/faults/fault_shared.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace detail {
namespace {

using std::chrono::milliseconds;

void copyTo(char* dst, size_t cap, const std::string& s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

struct Report {
  std::string outcome, opName, message;
  int64_t errNs = 0, issueNs = 0;
  int failedOp = -1;
  uint64_t seq = 0;
};

void publish(RankSlot& me, const Report& r) {
  copyTo(me.outcome, sizeof(me.outcome), r.outcome);
  copyTo(me.opName, sizeof(me.opName), r.opName);
  copyTo(me.message, sizeof(me.message), r.message);
  me.errNs = r.errNs;
  me.issueNs = r.issueNs;
  me.failedOp = r.failedOp;
  me.seq = r.seq;
  me.phase.store(kReported);
}

// Runs `fn`, mapping what it throws to a Report (outcome "" when nothing was thrown).
template <typename Fn>
Report attempt(Fn fn) {
  Report r;
  try {
    fn();
    return r;
  } catch (const CommError& e) {
    r.outcome = "CommError";
    r.message = e.what();
  } catch (const TimeoutError& e) {
    r.outcome = "TimeoutError";
    r.message = e.what();
  } catch (const Error& e) {
    r.outcome = "Error";
    r.message = e.what();
  } catch (const std::exception& e) {
    r.outcome = "std::exception";
    r.message = e.what();
  }
  r.errNs = nowNs();
  return r;
}

}  // namespace

int countFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory's own fd
}

void rankMain(const Injection& inj, SharedPage& sh, int rank) {
  RankSlot& me = sh.ranks[rank];
  const int ws = inj.worldSize;
  const Milliseconds setupTimeout = inj.setupTimeout;
  me.fdsBefore = countFds();

  std::shared_ptr<Store> store;
  std::shared_ptr<ProcessGroup> pg;
  Report setup = attempt([&] {
    TCPStoreOptions so;
    so.host = "127.0.0.1";
    so.port = static_cast<uint16_t>(sh.storePort.load());
    so.secret = "";
    so.timeout = setupTimeout;
    store = std::make_shared<TCPStore>(so);
    ProcessGroup::Options po;
    po.timeout = setupTimeout;
    po.config = inj.backend.config;
    pg = createProcessGroup(inj.backend.backend, store, rank, ws, po);
  });
  Report rep;
  if (!setup.outcome.empty()) {
    rep = setup;
    rep.outcome = "setup:" + setup.outcome;
    rep.opName = "setup";
  } else {
    me.phase.store(kReady);
    std::thread closer;
    std::atomic<bool> stopCloser{false};
    if (inj.fault == Fault::kCloseConnection && rank == inj.victim) {
      closer = std::thread([&] {
        waitFor([&] { return stopCloser.load() || me.opIndex.load() >= inj.atOp; },
                milliseconds(30000));
        if (stopCloser.load() || me.opIndex.load() < inj.atOp) return;
        std::this_thread::sleep_for(std::chrono::microseconds(inj.delayUs));
        sh.injectNs.store(nowNs());
        try {
          verbs::closeConnectionForTesting(*pg, inj.peer);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "[rank %d] closeConnectionForTesting failed: %s\n", rank, e.what());
        }
      });
    }
    const bool expectError = inj.fault == Fault::kSigkill || inj.fault == Fault::kSigstop ||
                             inj.fault == Fault::kCloseConnection;
    // Faults that must not fail collectives: a fixed number of ops on every rank (they must agree),
    // a few of them after the fault.
    const int lastOp = expectError ? inj.atOp + 300 : inj.atOp + 8;
    // Faults that must fail an op go on past lastOp until the fault is in (300 tiny ops can take
    // less than the injection's delay), bounded: until an op issued 20 ms after the injection
    // time ran, since the harness notes that time just before its kill() or close, and a
    // survivor that stopped at the first sign of it could have run its last op before the fault
    // landed (2 ranks, 534 barriers of ~1 us: done inside the 0.7 ms delay). Ranks may stop at
    // different ops then: any op after the fault fails anyway.
    const auto keepGoingUntil = std::chrono::steady_clock::now() + milliseconds(60000);
    int64_t lastIssued = 0;
    auto more = [&](int i) {
      if (i < lastOp) return true;
      if (!expectError || std::chrono::steady_clock::now() >= keepGoingUntil) return false;
      const int64_t injected = sh.injectNs.load();
      return injected == 0 || lastIssued < injected + 20'000'000;
    };
    for (int i = 0; more(i) && rep.outcome.empty(); ++i) {
      if (!expectError && i == inj.atOp + 5) {
        waitFor([&] { return sh.injectNs.load() != 0; }, milliseconds(10000));
      }
      me.opIndex.store(i);
      CollectiveRun run(inj.collective, rank, ws, inj.count, i);
      const uint64_t seq = pg->sequenceNumber();
      const int64_t issued = nowNs();
      lastIssued = issued;
      rep = attempt([&] {
        // The op's own timeout fails it; the wait's bound is only the harness's backstop.
        run.issue(*pg, inj.opTimeout)->wait(inj.opTimeout + milliseconds(5000));
        const std::string bad = run.verify();
        if (!bad.empty()) throw std::logic_error(bad);
      });
      if (rep.outcome == "std::exception") rep.outcome = "wrong result";
      rep.opName = collectiveName(inj.collective);
      rep.failedOp = i;
      rep.seq = seq;
      rep.issueNs = issued;
    }
    if (rep.outcome.empty() && inj.fault == Fault::kStoreKill) {
      // Collectives went on without the store; a call that needs it must now fail.
      const int64_t issued = nowNs();
      rep = attempt([&] { pg->monitoredBarrier(inj.opTimeout); });
      rep.opName = "monitoredBarrier";
      rep.issueNs = issued;
      rep.failedOp = lastOp;
    }
    if (rep.outcome.empty()) {
      rep.outcome = "completed";
      rep.opName = "";
    }
    stopCloser.store(true);
    if (closer.joinable()) closer.join();
    publish(me, rep);
    // Keep the group (and its connections) until every survivor reported: a survivor leaving
    // would otherwise fail the others with its own departure instead of the fault.
    waitFor(
        [&] {
          for (int r = 0; r < ws; ++r)
            if (survives(inj, r) && sh.ranks[r].phase.load() < kReported) return false;
          return true;
        },
        inj.opTimeout + milliseconds(5000));
    pg.reset();
    store.reset();
    me.fdsAfter = countFds();
    me.phase.store(kDone);
    return;
  }
  publish(me, rep);
  pg.reset();
  store.reset();
  me.fdsAfter = countFds();
  me.phase.store(kDone);
}

}  // namespace detail
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
