#include "backends/nccl/pending_works.h"

#include <algorithm>
#include <utility>

namespace c10d {
namespace nccl {

void PendingWorks::add(Entry entry) {
  MutexLock lock(mu_);
  entries_.push_back(std::move(entry));
}

size_t PendingWorks::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

PendingWorks::PollResult PendingWorks::poll(Clock::time_point now) {
  PollResult result;
  std::vector<std::shared_ptr<Work>> done;
  std::vector<std::pair<std::shared_ptr<Work>, std::exception_ptr>> failed;
  {
    MutexLock lock(mu_);
    std::vector<Entry> keep;
    keep.reserve(entries_.size());
    const Entry* expired = nullptr;
    std::vector<int> running;  // streams whose oldest live entry is still running (few)
    for (Entry& e : entries_) {
      if (e.work->isCompleted()) continue;  // finished by wait() or aborted
      if (e.stream >= 0 && std::find(running.begin(), running.end(), e.stream) != running.end()) {
        keep.push_back(std::move(e));  // behind a running op of its stream: cannot have fired
        continue;
      }
      bool fired = false;
      try {
        fired = e.query();
      } catch (...) {
        failed.emplace_back(e.work, std::current_exception());
        if (!result.failure) {
          result.failure = std::current_exception();
          result.failureWhere = e.where;
        }
        continue;
      }
      if (fired) {
        done.push_back(e.work);
        continue;
      }
      if (e.stream >= 0) running.push_back(e.stream);
      keep.push_back(std::move(e));
    }
    entries_.swap(keep);
    for (const Entry& e : entries_) {
      if (e.deadline <= now && (expired == nullptr || e.deadline < expired->deadline)) {
        expired = &e;
      }
    }
    if (expired != nullptr) {
      result.expired = expired->work;
      result.expiredWhere = expired->where;
    }
  }
  for (auto& w : done) {
    if (w->finish()) ++result.completed;
  }
  for (auto& f : failed) f.first->finish(f.second);
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
}  // namespace c10d
