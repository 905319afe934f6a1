#include "tools/c10drun/elastic_agent.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "c10d/base/abi.h"
#include "tools/c10drun/rdzv_backend.h"
#include "tools/c10drun/rendezvous.h"
#include "tools/c10drun/supervisor.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {
namespace {

// Thrown out of the rendezvous' waits when the launcher is signalled.
struct Interrupted {};

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

int runElastic(const Options& options, SignalEvents& signals, int outFd, int errFd) {
  Supervisor sup(options, signals, outFd, errFd);
  auto log = [&](const std::string& s) { sup.message(s); };
  auto idle = [&](int ms) {
    sup.pollOnce(ms);
    if (sup.signal() != 0) throw Interrupted{};
  };

  RendezvousStore rs;
  try {
    rs = openRendezvousStore(options, log);
  } catch (const UsageError& e) {
    log(e.what());
    return kUsageExitCode;
  } catch (const std::exception& e) {
    log(std::string("error: cannot open the rendezvous store (--rdzv-backend ") +
        options.rdzvBackend + " --rdzv-endpoint " + options.rdzvEndpoint + "): " + e.what());
    return 1;
  }
  const std::string host = hostName();
  NodeDesc self{options.localAddr.empty() ? host : options.localAddr,
                host + ":" + std::to_string(getpid())};
  const std::string node = "node " + self.describe();
  auto storeLost = [&](const std::exception& e) {
    log("error: " + node + ": the rendezvous " + rs.where + " failed: " + e.what() +
        (rs.hosting || options.rdzvBackend != "c10d"
             ? std::string()
             : std::string(" (with --rdzv-backend c10d the store lives in the launcher that "
                           "hosts it: did that node stop?)")));
    return 1;
  };

  std::optional<ElasticRendezvous> rdzv;
  try {
    rdzv.emplace(rs.store, options.rdzvId, options.minNodes, options.nnodes, options.maxRestarts,
                 options.rdzvConf, self, idle, log);
  } catch (const std::exception& e) {
    return storeLost(e);
  }

  // Every exit from here on: say so in the store; the host then waits (bounded) for its peers,
  // which may still need the store to learn why the job ends.
  struct Leave {
    ElasticRendezvous& rdzv;
    const RendezvousStore& rs;
    const Options& options;
    Supervisor& sup;
    ~Leave() {
      try {
        rdzv.leave();
        if (!rs.hosting) return;
        const auto bound = std::chrono::milliseconds(
            static_cast<long long>(options.gracePeriodS * 1000) + 1000 +
            options.rdzvConf.keepAliveInterval.count() * options.rdzvConf.keepAliveMaxAttempt);
        if (!rdzv.waitForPeersToLeave(bound)) {
          sup.message("not every member of the last round left within " +
                      std::to_string(bound.count()) + " ms; closing the rendezvous store");
        }
      } catch (...) {  // a signal, or the store: leaving anyway
      }
    }
  } leaveGuard{*rdzv, rs, options, sup};

  int lastCode = 1;  // the exit code when the job cannot go on
  for (;;) {
    RoundInfo round;
    try {
      round = rdzv->next([] { return findFreePort(); });
    } catch (const Interrupted&) {
      log("received " + signalName(sup.signal()) + " while in the rendezvous; exiting");
      return 128 + sup.signal();
    } catch (const RendezvousError& e) {
      log(std::string("error: ") + e.what());
      return lastCode;
    } catch (const std::exception& e) {
      return storeLost(e);
    }
    const int first = round.groupRank * options.nprocPerNode;
    log(rdzv->describe() + ": " + node + " is group rank " + std::to_string(round.groupRank) +
        " of " + std::to_string(round.groupWorldSize) + " nodes (ranks " + std::to_string(first) +
        ".." + std::to_string(first + options.nprocPerNode - 1) + " of " +
        std::to_string(round.groupWorldSize * options.nprocPerNode) + "), master " +
        round.masterAddr + ":" + std::to_string(round.masterPort) + ", restart " +
        std::to_string(round.restartCount));

    GroupSpec spec;
    spec.groupRank = round.groupRank;
    spec.groupWorldSize = round.groupWorldSize;
    spec.masterAddr = round.masterAddr;
    spec.masterPort = round.masterPort;
    spec.restartCount = round.restartCount;
    spec.extraEnv = {"TORCHELASTIC_RUN_ID=" + options.rdzvId,
                     "C10D_RDZV_ROUND=" + std::to_string(round.round)};
    // Ends the round for everyone, without letting a store failure hide the local cause.
    auto invalidate = [&](const std::string& why, bool failure) {
      try {
        rdzv->invalidate(why, failure);
      } catch (const std::exception& e) {
        log("could not record the end of " + rdzv->describe() + " in the store: " + e.what());
      }
    };
    try {
      sup.startGroup(spec);
    } catch (const Error& e) {
      const bool exec = dynamic_cast<const ExecError*>(&e) != nullptr;
      log(exec ? std::string(e.what()) : std::string("error: starting workers: ") + e.what());
      invalidate(node + ": cannot start its workers", true);
      sup.stopGroup(SIGTERM);
      sup.finishGroup();
      return exec ? kUsageExitCode : 1;
    }

    std::string reason;
    std::string storeError;
    const auto outcome = sup.monitor([&] {
      try {
        if (auto why = rdzv->check()) {
          reason = *why;
          return true;
        }
      } catch (const std::exception& e) {
        storeError = e.what();
        return true;
      }
      return false;
    });

    if (outcome == Supervisor::Outcome::kSuccess) {
      sup.finishGroup();
      try {
        rdzv->markDone();
        if (rs.hosting) {
          // The others still need the store: stay until each is done or declared gone.
          while (!rdzv->allDone()) {
            if (auto why = rdzv->check()) {
              log(rdzv->describe() + " ended after this node finished: " + *why);
              break;
            }
            idle(options.monitorIntervalMs);
          }
        }
      } catch (const Interrupted&) {
        return 128 + sup.signal();
      } catch (const std::exception& e) {
        log("warning: " + node + " finished, but recording it in the store failed: " + e.what());
      }
      return 0;
    }
    if (outcome == Supervisor::Outcome::kSignal) {
      log("received " + signalName(sup.signal()) + "; forwarding it to the workers and leaving " +
          rdzv->describe());
      invalidate(node + ": its launcher received " + signalName(sup.signal()), true);
      sup.stopGroup(sup.signal());
      sup.finishGroup();
      return 128 + sup.signal();
    }
    if (outcome == Supervisor::Outcome::kFailure) {
      const std::string what = sup.failureText();
      lastCode = sup.failureCode();
      log(what + "; ending " + rdzv->describe());
      invalidate(node + ": " + what, true);
    } else if (!storeError.empty()) {
      sup.stopGroup(SIGTERM);
      sup.finishGroup();
      log("error: " + node + ": the rendezvous " + rs.where + " failed: " + storeError);
      return 1;
    } else {
      log(rdzv->describe() + " ended: " + reason + "; stopping the workers to re-join");
    }
    sup.stopGroup(SIGTERM);
    sup.finishGroup();
    if (sup.signal() != 0) {
      log("received " + signalName(sup.signal()) + " while stopping workers; exiting");
      return 128 + sup.signal();
    }
  }
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
