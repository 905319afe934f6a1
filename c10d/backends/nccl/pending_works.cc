#include "c10d/backends/nccl/pending_works.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

void PendingWorks::add(Entry entry) {
  MutexLock lock(mu_);
  entries_.push_back(std::move(entry));
}

size_t PendingWorks::size() const {
  MutexLock lock(mu_);
  return entries_.size() + polling_;
}

PendingWorks::PollResult PendingWorks::poll(Clock::time_point now) {
  // The entries are taken out and examined without the lock, so that add() on the issuing
  // thread never waits behind event queries and finish()es; those still running go back in
  // front of whatever was added meanwhile (newer, so issue order is kept). Two vectors trade
  // places, so neither side reallocates once they have grown.
  std::vector<Entry> polled;
  {
    MutexLock lock(mu_);
    polled.swap(entries_);
    entries_.swap(spare_);
    polling_ = polled.size();
  }
  PollResult result;
  size_t kept = 0;           // polled[0, kept): still running, in issue order
  std::vector<int> running;  // streams whose oldest live entry is still running (few)
  auto keep = [&](Entry& e) {
    if (&polled[kept] != &e) polled[kept] = std::move(e);
    ++kept;
  };
  for (Entry& e : polled) {
    if (e.work->isCompleted()) continue;  // finished by wait() or aborted
    if (e.stream >= 0 && std::find(running.begin(), running.end(), e.stream) != running.end()) {
      keep(e);  // behind a running op of its stream: cannot have fired
      continue;
    }
    bool fired = false;
    try {
      fired = e.query();
    } catch (...) {
      e.work->finish(std::current_exception());
      if (!result.failure) {
        result.failure = std::current_exception();
        result.failureWhere = e.where;
      }
      continue;
    }
    if (fired) {
      if (e.work->finish()) ++result.completed;
      continue;
    }
    if (e.stream >= 0) running.push_back(e.stream);
    keep(e);
  }
  polled.erase(polled.begin() + static_cast<std::ptrdiff_t>(kept), polled.end());
  const Entry* expired = nullptr;
  for (const Entry& e : polled) {
    if (e.deadline <= now && (expired == nullptr || e.deadline < expired->deadline)) expired = &e;
  }
  if (expired != nullptr) {
    result.expired = expired->work;
    result.expiredWhere = expired->where;
  }
  MutexLock lock(mu_);
  polling_ = 0;
  polled.insert(polled.end(), std::make_move_iterator(entries_.begin()),
                std::make_move_iterator(entries_.end()));
  entries_.clear();
  entries_.swap(polled);
  spare_.swap(polled);
  return result;
}

PendingWorks::Clock::time_point PendingWorks::nextDeadline() const {
  MutexLock lock(mu_);
  Clock::time_point next = Clock::time_point::max();
  for (const Entry& e : entries_) {
    if (e.deadline < next) next = e.deadline;
  }
  return next;
}

size_t PendingWorks::failAll(const ErrorFor& errorFor) {
  std::vector<Entry> all;
  {
    MutexLock lock(mu_);
    all.swap(entries_);
  }
  size_t n = 0;
  for (const Entry& e : all) {
    if (e.work->isCompleted()) continue;
    if (e.work->finish(errorFor(*e.work, e.where))) ++n;
  }
  return n;
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
