#include "perf/common/timed_group.h"

#include <algorithm>
#include <chrono>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TimedGroup::TimedGroup(std::shared_ptr<ProcessGroup> inner)
    : ForwardingGroup(std::move(inner), "/timed"), record_(std::make_shared<Record>()) {}

void TimedGroup::reset() {
  MutexLock lock(record_->mu);
  ++record_->generation;
  record_->intervals.clear();
}

TimedGroup::Timeline TimedGroup::collect(Milliseconds timeout) {
  MutexLock lock(record_->mu);
  auto& iv = record_->intervals;
  const bool done = lock.waitFor(record_->cv, timeout, [&]() C10D_REQUIRES(record_->mu) {
    return std::all_of(iv.begin(), iv.end(), [](const Interval& i) { return i.doneNs != 0; });
  });
  if (!done) {
    const auto pending =
        std::count_if(iv.begin(), iv.end(), [](const Interval& i) { return i.doneNs == 0; });
    C10D_THROW(TimeoutError, "TimedGroup::collect: ", pending, " of ", iv.size(),
               " allreduces of group ", name(), " still in flight after ", timeout.count(), " ms");
  }
  Timeline t;
  t.ops = iv.size();
  if (iv.empty()) return t;
  std::vector<Interval> sorted = iv;
  std::sort(sorted.begin(), sorted.end(),
            [](const Interval& a, const Interval& b) { return a.issueNs < b.issueNs; });
  int64_t busy = 0;
  int64_t curStart = sorted[0].issueNs;
  int64_t curEnd = std::max(sorted[0].doneNs, curStart);
  int64_t lastDone = curEnd;
  for (size_t k = 1; k < sorted.size(); ++k) {
    const Interval& i = sorted[k];
    const int64_t end = std::max(i.doneNs, i.issueNs);
    lastDone = std::max(lastDone, end);
    if (i.issueNs > curEnd) {
      busy += curEnd - curStart;
      curStart = i.issueNs;
      curEnd = end;
    } else {
      curEnd = std::max(curEnd, end);
    }
  }
  busy += curEnd - curStart;
  t.busySeconds = static_cast<double>(busy) * 1e-9;
  t.spanSeconds = static_cast<double>(lastDone - sorted[0].issueNs) * 1e-9;
  return t;
}

std::shared_ptr<Work> TimedGroup::forward(OpType /*op*/, Issue issue) {
  size_t index = 0;
  uint64_t generation = 0;
  {
    MutexLock lock(record_->mu);
    generation = record_->generation;
    index = record_->intervals.size();
    record_->intervals.push_back({nowNs(), 0});
  }
  std::shared_ptr<Work> work;
  try {
    work = issue();
  } catch (...) {
    // Never issued: an empty interval, so that collect() does not wait for it.
    MutexLock lock(record_->mu);
    if (record_->generation == generation && index < record_->intervals.size()) {
      record_->intervals[index].doneNs = record_->intervals[index].issueNs;
    }
    throw;
  }
  std::shared_ptr<Record> record = record_;
  work->then([record, generation, index](Work&) {
    const int64_t t = nowNs();
    {
      MutexLock lock(record->mu);
      if (record->generation != generation || index >= record->intervals.size()) return;
      record->intervals[index].doneNs = t;
    }
    record->cv.notify_all();
  });
  return work;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
