#include "perf/common/timed_group.h"

#include <algorithm>
#include <chrono>

namespace c10d {
namespace perf {

namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ProcessGroup::Options optionsOf(const ProcessGroup& inner) {
  ProcessGroup::Options o = inner.options();
  o.groupName = inner.options().groupName + "/timed";
  return o;
}

}  // namespace

TimedGroup::TimedGroup(std::shared_ptr<ProcessGroup> inner)
    : ProcessGroup(inner ? inner->store() : nullptr, inner ? inner->rank() : 0,
                   inner ? inner->size() : 1, inner ? optionsOf(*inner) : ProcessGroup::Options{}),
      inner_(std::move(inner)),
      record_(std::make_shared<Record>()) {
  C10D_CHECK_ARG(inner_ != nullptr, "TimedGroup: no group to wrap");
}

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

template <typename Issue>
std::shared_ptr<Work> TimedGroup::timed(Issue&& issue) {
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

// ---- every op: forwarded, timed ----

std::shared_ptr<Work> TimedGroup::doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                              uint64_t /*seq*/) {
  return timed([&] { return inner_->broadcast(tensor, opts); });
}

std::shared_ptr<Work> TimedGroup::doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                              uint64_t /*seq*/) {
  return timed([&] { return inner_->allreduce(tensor, opts); });
}

std::shared_ptr<Work> TimedGroup::doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                       const AllreduceCoalescedOptions& opts,
                                                       uint64_t /*seq*/) {
  return timed([&] { return inner_->allreduceCoalesced(tensors, opts); });
}

std::shared_ptr<Work> TimedGroup::doReduce(Tensor tensor, const ReduceOptions& opts,
                                           uint64_t /*seq*/) {
  return timed([&] { return inner_->reduce(tensor, opts); });
}

std::shared_ptr<Work> TimedGroup::doAllgather(const std::vector<Tensor>& outputs, Tensor input,
                                              const AllgatherOptions& opts, uint64_t /*seq*/) {
  return timed([&] { return inner_->allgather(outputs, input, opts); });
}

std::shared_ptr<Work> TimedGroup::doAllgatherIntoTensor(Tensor output, Tensor input,
                                                        const AllgatherOptions& opts,
                                                        uint64_t /*seq*/) {
  return timed([&] { return inner_->allgatherIntoTensor(output, input, opts); });
}

std::shared_ptr<Work> TimedGroup::doGather(const std::vector<Tensor>& outputs, Tensor input,
                                           const GatherOptions& opts, uint64_t /*seq*/) {
  return timed([&] { return inner_->gather(outputs, input, opts); });
}

std::shared_ptr<Work> TimedGroup::doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                            const ScatterOptions& opts, uint64_t /*seq*/) {
  return timed([&] { return inner_->scatter(output, inputs, opts); });
}

std::shared_ptr<Work> TimedGroup::doReduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                  const ReduceScatterOptions& opts,
                                                  uint64_t /*seq*/) {
  return timed([&] { return inner_->reduceScatter(output, inputs, opts); });
}

std::shared_ptr<Work> TimedGroup::doReduceScatterTensor(Tensor output, Tensor input,
                                                        const ReduceScatterOptions& opts,
                                                        uint64_t /*seq*/) {
  return timed([&] { return inner_->reduceScatterTensor(output, input, opts); });
}

std::shared_ptr<Work> TimedGroup::doAlltoall(const std::vector<Tensor>& outputs,
                                             const std::vector<Tensor>& inputs,
                                             const AllToAllOptions& opts, uint64_t /*seq*/) {
  return timed([&] { return inner_->alltoall(outputs, inputs, opts); });
}

std::shared_ptr<Work> TimedGroup::doAlltoallSingle(Tensor output, Tensor input,
                                                   const std::vector<size_t>& outputSplits,
                                                   const std::vector<size_t>& inputSplits,
                                                   const AllToAllOptions& opts, uint64_t /*seq*/) {
  return timed(
      [&] { return inner_->alltoallSingle(output, input, outputSplits, inputSplits, opts); });
}

std::shared_ptr<Work> TimedGroup::doBarrier(const BarrierOptions& opts, uint64_t /*seq*/) {
  return timed([&] { return inner_->barrier(opts); });
}

std::shared_ptr<Work> TimedGroup::doSend(Tensor tensor, int dstRank, const SendRecvOptions& opts,
                                         uint64_t /*seq*/) {
  return timed([&] { return inner_->send(tensor, dstRank, opts); });
}

std::shared_ptr<Work> TimedGroup::doRecv(Tensor tensor, int srcRank, const SendRecvOptions& opts,
                                         uint64_t /*seq*/) {
  return timed([&] {
    return srcRank == -1 ? inner_->recvAnySource(tensor, opts)
                         : inner_->recv(tensor, srcRank, opts);
  });
}

void TimedGroup::doStartCoalescing() {
  inner_->startCoalescing();
}

std::shared_ptr<Work> TimedGroup::doEndCoalescing(std::vector<std::shared_ptr<Work>> /*works*/,
                                                  uint64_t /*seq*/) {
  // The inner group collected the same ops (issued through it while it was coalescing).
  return inner_->endCoalescing();
}

}  // namespace perf
}  // namespace c10d
