// GroupDiagnostics: what a process group knows about itself when something goes wrong.
//
// One per ProcessGroup (made on its first op, shared with its Works): the flight recorder ring
// and stats (flight_recorder.h), and what runs on the group's first timeout or communication
// error (onFailure):
//   - desync report (TimeoutError only): this rank publishes its position (the op it is stuck in,
//     or the last one it completed) through the group's store under "c10d/diag/<n>/pos/<rank>",
//     waits up to C10D_DESYNC_WAIT_MS for the other ranks' positions and appends who is behind to
//     the error: "rank 3 is still at allreduce #16; ranks 0-2 wait in allreduce #17". A rank that
//     never publishes (stopped, dead, busy outside the group) is named as silent. Ranks that time
//     out later read the positions published earlier, so the last to time out sees the most.
//   - flight record dump: the ring as JSON to C10D_FLIGHT_RECORDER_DIR/<group>.rank<r>.json (read
//     by tools/c10d_trace), or, without that setting, the last ops as a summary on stderr.
// and, at shutdown when C10D_STRAGGLER_REPORT=1, the straggler summary (stragglerReport()).
//
// Threads: thread-safe; starts no threads. onFailure() runs on whichever thread reports the
// failure (a backend's engine or worker thread) and blocks it for at most C10D_DESYNC_WAIT_MS
// plus a few store round trips (each bounded by the store's own timeout: a store whose server is
// stopped delays the report by that much). Store failures during a report are noted in the report,
// never thrown.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"
#include "c10d/core/diagnostics_config.h"
#include "c10d/core/flight_recorder.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

class GroupDiagnostics {
 public:
  // `instance` numbers this rank's groups over `store` (every rank makes them in the same order),
  // keeping the keys of two groups on one store apart.
  GroupDiagnostics(std::shared_ptr<Store> store, int64_t instance, std::string group,
                   std::string backend, int rank, int size, DiagnosticsConfig cfg);

  FlightRecorder& recorder() { return recorder_; }
  const FlightRecorder& recorder() const { return recorder_; }
  const DiagnosticsConfig& config() const { return cfg_; }

  // The first TimeoutError or CommError of the group (see header comment): returns `error` with
  // the desync report appended (same exception kind; a CommError only when another rank has
  // timed out already, see onFailure), after dumping the ring. A later
  // TimeoutError gets the same report appended (a call made while the first report runs waits
  // for it); other errors are returned as is.
  std::exception_ptr onFailure(std::exception_ptr error) C10D_EXCLUDES(reportMu_);

  // Publishes this rank's position (as failed with a communication error when `commFailed`), waits
  // up to C10D_DESYNC_WAIT_MS for the others' and says who is behind. Never throws (a store failure
  // is described in the text).
  std::string desyncReport(bool commFailed);
  // Whether another rank has published a position in which it waits (it timed out), looking for up
  // to 100 ms. Never throws.
  bool peerTimedOut();
  // Whether ranks publish and read positions through the store (desync reports on, a recorder, a
  // store and a peer).
  bool exchangesPositions() const {
    return cfg_.desyncWaitMs > 0 && recorder_.capacity() > 0 && store_ && size_ >= 2;
  }
  // A rank whose op failed with a CommError (a peer died, a connection broke) publishes that, so
  // the desync reports of ranks that time out list it as failed rather than silent: silent then
  // means stopped or dead. One store write; a store that fails is ignored.
  void publishFailure();

  // Writes the dump to `path` (throws Error naming the path on failure).
  void dump(const std::string& path, const std::string& reason) const;
  // The path a failure dump goes to under C10D_FLIGHT_RECORDER_DIR ("" when unset).
  std::string dumpPath() const;

  // Collective over the group: every rank publishes (seq, time) of the collectives in its ring;
  // rank 0 waits up to `timeout` for the others and returns which rank arrived last most often
  // (the one with the shortest time from issue to completion: it kept nobody waiting for it).
  // Other ranks return "". Never throws (failures are described in the text).
  std::string stragglerReport(Milliseconds timeout);

 private:
  std::string key(const std::string& what) const;

  const std::shared_ptr<Store> store_;
  const int64_t instance_;
  const std::string group_;
  const int rank_;
  const int size_;
  const DiagnosticsConfig cfg_;
  FlightRecorder recorder_;
  Mutex reportMu_;  // held while the first failure is reported
  std::atomic<bool> failed_{false};
  std::string report_ C10D_GUARDED_BY(reportMu_);  // the first failure's desync report
  std::atomic<uint64_t> stragglerCalls_{0};
};

C10D_NAMESPACE_END
}  // namespace c10d
