// PendingWorks: a group's ops in flight and the timeout bookkeeping of its watchdog, kept apart
// from CUDA so that it is unit-tested on machines without a GPU (the event query is injected, and
// poll() takes the current time as an argument).
//
// Each entry is a Work, its deadline (issue time + the op's timeout), a query that says whether
// the op's completion event has fired, and where it runs ("cuda:0") for messages. poll() finishes
// every entry whose query says done (Work::finish(), on the polling thread, outside the lock) and
// drops entries that were completed elsewhere (Work::wait() finishing them first, abort()); it then
// reports the running entry with the earliest deadline that has passed, if any. Entries with the
// same `stream` (>= 0) complete in issue order (their events are recorded on one CUDA stream):
// poll() stops querying a stream at its first entry that is still running, so a poll costs one
// event query per stream rather than one per op in flight. A query that
// throws fails its Work with that exception and is reported too. failAll() fails and drops every
// entry (used after the communicator is aborted).
//
// Thread-safe: add() from the issuing thread, poll() from one thread at a time (the watchdog),
// failAll() from either. poll() examines the entries outside the lock (add() never waits behind
// an event query); size() counts the entries it holds meanwhile. Entries a poll keeps that a
// concurrent failAll() missed are failed by the next poll (their query throws once the device is
// marked failed) or by a final failAll() after the watchdog stopped.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

class PendingWorks {
 public:
  using Clock = std::chrono::steady_clock;
  // True when the op's completion event has fired. May throw (a CUDA error).
  using Query = std::function<bool()>;

  struct Entry {
    std::shared_ptr<BackendWork> work;
    Clock::time_point deadline;
    Query query;
    std::string where;  // "cuda:0"
    int stream = -1;    // entries of one stream >= 0 complete in order; -1: no order known
  };

  struct PollResult {
    size_t completed = 0;                  // entries this poll finished successfully
    std::shared_ptr<BackendWork> expired;  // running past its deadline (earliest deadline first)
    std::string expiredWhere;
    std::exception_ptr failure;  // first exception a query threw (its Work failed with it)
    std::string failureWhere;
  };

  void add(Entry entry) C10D_EXCLUDES(mu_);
  size_t size() const C10D_EXCLUDES(mu_);
  bool empty() const C10D_EXCLUDES(mu_) { return size() == 0; }

  PollResult poll(Clock::time_point now) C10D_EXCLUDES(mu_);

  // The earliest deadline among the entries; Clock::time_point::max() when there are none.
  Clock::time_point nextDeadline() const C10D_EXCLUDES(mu_);

  // Fails every entry with errorFor(work, where) and drops it; returns how many were failed.
  using ErrorFor = std::function<std::exception_ptr(const Work& work, const std::string& where)>;
  size_t failAll(const ErrorFor& errorFor) C10D_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::vector<Entry> entries_ C10D_GUARDED_BY(mu_);  // in issue order
  std::vector<Entry> spare_ C10D_GUARDED_BY(mu_);    // empty; poll() swaps it with entries_
  size_t polling_ C10D_GUARDED_BY(mu_) = 0;          // entries a poll() has taken out
};

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
