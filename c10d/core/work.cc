#include "c10d/core/work.h"

#include <cstdio>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/group_diagnostics.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

const char* toString(OpType op) {
  switch (op) {
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kAllreduceCoalesced:
      return "allreduce_coalesced";
    case OpType::kReduce:
      return "reduce";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kAllgatherIntoTensor:
      return "allgather_into_tensor";
    case OpType::kGather:
      return "gather";
    case OpType::kScatter:
      return "scatter";
    case OpType::kReduceScatter:
      return "reduce_scatter";
    case OpType::kReduceScatterTensor:
      return "reduce_scatter_tensor";
    case OpType::kAlltoall:
      return "alltoall";
    case OpType::kAlltoallSingle:
      return "alltoall_single";
    case OpType::kBarrier:
      return "barrier";
    case OpType::kSend:
      return "send";
    case OpType::kRecv:
      return "recv";
    case OpType::kRecvAnySource:
      return "recv_any_source";
    case OpType::kCoalesced:
      return "coalesced";
    case OpType::kUnknown:
      return "unknown";
  }
  return "unknown";
}

namespace {

// Runs a user callback; an exception escaping it is reported, never propagated.
void runCallback(const Work::Callback& cb, Work& work) {
  try {
    cb(work);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d: exception escaped a completion callback of %s: %s\n",
                 work.describe().c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "c10d: unknown exception escaped a completion callback of %s\n",
                 work.describe().c_str());
  }
}

// Waiting for durations near Milliseconds::max() would overflow the clock arithmetic; a year is
// "forever" for every practical purpose and keeps the deadline representable.
constexpr Milliseconds kMaxWait{365LL * 24 * 3600 * 1000};

}  // namespace

Work::Work(OpType op, uint64_t seq, std::string group, Milliseconds timeout)
    : op_(op), seq_(seq), group_(std::move(group)), timeout_(timeout) {}

Work::~Work() = default;

bool Work::isCompleted() const {
  MutexLock lock(mu_);
  return completed_;
}

bool Work::isSuccess() const {
  MutexLock lock(mu_);
  return completed_ && !error_;
}

std::exception_ptr Work::exception() const {
  MutexLock lock(mu_);
  return error_;
}

bool Work::wait(Milliseconds timeout) {
  Milliseconds t = timeout == kUnsetTimeout ? timeout_ : timeout;
  if (t < Milliseconds::zero()) t = Milliseconds::zero();
  if (t > kMaxWait) t = kMaxWait;
  if (done_.load(std::memory_order_acquire)) {
    // error_ is final once done_ is set.
    const std::exception_ptr& error = finalError();
    if (error) std::rethrow_exception(error);
    return true;
  }
  MutexLock lock(mu_);
  auto done = [this]() C10D_REQUIRES(mu_) { return completed_; };
  if (!completed_ && !cv_) cv_ = std::make_unique<std::condition_variable>();
  if (!completed_ && !lock.waitFor(*cv_, t, done)) {
    // The op's own timeout passed: report it through the group's diagnostics (desync report,
    // dump), which waits for a report the backend may be running for the same stuck op.
    // Pending, so diagOwner_ is set if diag_ is (see retainDiagnostics()).
    std::shared_ptr<GroupDiagnostics> diag = timeout == kUnsetTimeout ? diagOwner_ : nullptr;
    lock.unlock();
    auto error = std::make_exception_ptr(
        TimeoutError(detail::str(describe(), " did not complete within ", t.count(),
                                 " ms (Work::wait timed out; the op itself is still pending) [",
                                 __FILE__, ":", __LINE__, "]")));
    if (diag) {
      error = diag->onFailure(error);
      // Meanwhile the backend may have failed the op itself: its error says more.
      lock.lock();
      if (completed_ && error_) error = error_;
      if (completed_ && !error_) return true;
      lock.unlock();
    }
    std::rethrow_exception(error);
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

void Work::abort() {
  {
    MutexLock lock(mu_);
    if (completed_ || aborting_) return;
    aborting_ = true;
  }
  try {
    onAbort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d: onAbort of %s threw: %s\n", describe().c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "c10d: onAbort of %s threw an unknown exception\n", describe().c_str());
  }
  finish(std::make_exception_ptr(Error(describe() + " aborted")));
}

void Work::then(Callback cb) {
  if (!cb) return;
  {
    MutexLock lock(mu_);
    if (!completed_) {
      callbacks_.push_back(std::move(cb));
      return;
    }
  }
  runCallback(cb, *this);
}

std::shared_future<void> Work::future() {
  MutexLock lock(mu_);
  if (!promise_) {
    promise_ = std::make_unique<std::promise<void>>();
    future_ = promise_->get_future().share();
    if (completed_) {
      if (error_) {
        promise_->set_exception(error_);
      } else {
        promise_->set_value();
      }
    }
  }
  return future_;
}

// The flight record is updated under mu_ (the recorder's lock nests inside it and never calls
// back): a waiter that sees the Work complete also sees its record and stats updated.
void Work::markStarted(int64_t ns) {
  MutexLock lock(mu_);
  if (startNs_ != 0 || completed_) return;
  startNs_ = ns != 0 ? ns : FlightRecorder::nowNs();
  if (diag_) diag_->recorder().onStart(recordId_, startNs_);
}

void Work::markStartedUnshared(int64_t ns) {
  if (startNs_ != 0 || completed_) return;
  startNs_ = ns != 0 ? ns : FlightRecorder::nowNs();
  startUnpublished_ = diag_ != nullptr;
}

void Work::publishStartUnshared() {
  if (!startUnpublished_) return;
  startUnpublished_ = false;
  diag_->recorder().onStart(recordId_, startNs_);
}

void Work::finishUnshared(std::exception_ptr error) {
  if (completed_) return;
  if (error && diag_) error = diag_->onFailure(std::move(error));
  completed_ = true;
  error_ = std::move(error);
  endNs_ = FlightRecorder::nowNs();
  if (diag_) {
    // One recorder update for an op that started and ended here (markStartedUnshared()).
    diag_->recorder().onEnd(recordId_, endNs_, error_, startUnpublished_ ? startNs_ : 0);
    startUnpublished_ = false;
  }
  // Nobody could register a callback, ask for a future or wait yet: nothing to run or wake.
  done_.store(true, std::memory_order_release);
}

void Work::attachDiagnostics(std::shared_ptr<GroupDiagnostics> diag, uint64_t recordId) {
  if (!diag || recordId == FlightRecorder::kNoId) return;
  MutexLock lock(mu_);
  diagOwner_ = std::move(diag);
  diag_ = diagOwner_.get();
  recordId_ = recordId;
  if (startNs_ != 0) diag_->recorder().onStart(recordId_, startNs_);
  if (completed_) diag_->recorder().onEnd(recordId_, endNs_, error_);
}

void Work::linkDiagnostics(GroupDiagnostics* diag, uint64_t recordId) {
  diag_ = diag;
  recordId_ = recordId;
}

void Work::retainDiagnostics(const std::shared_ptr<GroupDiagnostics>& diag) {
  if (done_.load(std::memory_order_acquire)) return;
  MutexLock lock(mu_);
  if (!completed_) diagOwner_ = diag;
}

bool Work::finish(std::exception_ptr error) {
  if (error) {
    // A backend that fails an op with a timeout or a lost peer without going through
    // ProcessGroup::diagnoseFailure first (a p2p timeout) still gets the desync report and the
    // dump.
    GroupDiagnostics* d = nullptr;
    std::shared_ptr<GroupDiagnostics> keep;
    {
      MutexLock lock(mu_);
      if (completed_) return false;
      d = diag_;
      keep = diagOwner_;
    }
    if (d) error = d->onFailure(std::move(error));
  }
  std::vector<Callback> callbacks;
  {
    MutexLock lock(mu_);
    if (completed_) return false;
    completed_ = true;
    error_ = std::move(error);
    endNs_ = FlightRecorder::nowNs();
    if (diag_) diag_->recorder().onEnd(recordId_, endNs_, error_, startUnpublished_ ? startNs_ : 0);
    startUnpublished_ = false;
    callbacks.swap(callbacks_);
    if (promise_) {
      if (error_) {
        promise_->set_exception(error_);
      } else {
        promise_->set_value();
      }
    }
    // Notified under the lock: a waiter may destroy the Work as soon as it sees completed_.
    if (cv_) cv_->notify_all();
  }
  for (auto& cb : callbacks) runCallback(cb, *this);
  // The last touch of *this: a wait() that sees it may return and let the Work be destroyed.
  done_.store(true, std::memory_order_release);
  return true;
}

std::string Work::describe() const {
  std::string s = detail::str(toString(op_), " #", seq_);
  if (!group_.empty()) s += " in group " + group_;
  return s;
}

namespace {

// Completes when every part has; its error is the first failed part's (in part order).
class CompositeWork : public Work {
 public:
  CompositeWork(std::vector<std::shared_ptr<Work>> parts, OpType op, uint64_t seq,
                std::string group, Milliseconds timeout)
      : Work(op, seq, std::move(group), timeout), parts_(std::move(parts)) {}

  void start() {
    if (parts_.empty()) {
      finish();
      return;
    }
    remaining_.store(parts_.size());
    std::weak_ptr<Work> weak = shared_from_this();
    for (const auto& part : parts_) {
      part->then([weak](Work&) {
        auto self = weak.lock();
        if (self) static_cast<CompositeWork&>(*self).partDone();
      });
    }
  }

  void synchronize() override {
    for (const auto& p : parts_) p->synchronize();
  }

 protected:
  void onAbort() override {
    for (const auto& p : parts_) p->abort();
  }

 private:
  void partDone() {
    if (remaining_.fetch_sub(1) != 1) return;
    for (const auto& p : parts_) {
      if (auto e = p->exception()) {
        finish(e);
        return;
      }
    }
    finish();
  }

  const std::vector<std::shared_ptr<Work>> parts_;
  std::atomic<size_t> remaining_{0};
};

}  // namespace

std::shared_ptr<Work> makeCompositeWork(std::vector<std::shared_ptr<Work>> parts, OpType op,
                                        uint64_t seq, std::string group, Milliseconds timeout) {
  for (const auto& p : parts) C10D_CHECK(p != nullptr, "makeCompositeWork: a null part");
  auto work = std::make_shared<CompositeWork>(std::move(parts), op, seq, std::move(group), timeout);
  work->start();
  return work;
}

std::shared_ptr<Work> makeCompletedWork(OpType op, uint64_t seq, std::string group,
                                        std::exception_ptr error) {
  auto work = std::make_shared<BackendWork>(op, seq, std::move(group), kDefaultTimeout);
  work->finish(std::move(error));
  return work;
}

C10D_NAMESPACE_END
}  // namespace c10d
