// ProcessGroup bookkeeping: construction, sequence numbers, the broken state, coalescing and the
// store-based monitoredBarrier. The collectives are in process_group_collectives.cc, sub-groups in
// process_group_subgroups.cc.
#include "c10d/core/process_group.h"

#include <algorithm>
#include <chrono>

#include "c10d/base/abi.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

ProcessGroup::ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Options options)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      options_(std::move(options)),
      diagConfig_(DiagnosticsConfig::load(options_.config)) {
  C10D_CHECK_ARG(size_ >= 1 && size_ <= kMaxSize, "ProcessGroup: group size ", size_,
                 " (must be in [1, ", kMaxSize, "]) for group ", options_.groupName);
  C10D_CHECK_ARG(rank_ >= 0 && rank_ < size_, "ProcessGroup: rank ", rank_, " is out of range [0, ",
                 size_, ") for group ", options_.groupName);
  C10D_CHECK_ARG(options_.timeout >= Milliseconds::zero(), "ProcessGroup: timeout ",
                 options_.timeout.count(), " ms is negative for group ", options_.groupName);
  // Every rank makes its groups over a store in the same order: the count keys this group's
  // diagnostics entries (desync positions, straggler times) apart from other groups'.
  if (store_ && size_ > 1 && diagConfig_.flightRecorderSize > 0) {
    diagInstance_ = store_->add(detail::str("c10d/diag/instance/", rank_), 1);
  }
}

ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::name() const {
  return backendName() + ":" + options_.groupName;
}

std::exception_ptr ProcessGroup::brokenError() const {
  if (!brokenSet_.load(std::memory_order_acquire)) return nullptr;
  MutexLock lock(brokenMu_);
  return broken_;
}

void ProcessGroup::setBroken(std::exception_ptr error) {
  if (!error) return;
  MutexLock lock(brokenMu_);
  if (!broken_) broken_ = std::move(error);
  brokenSet_.store(true, std::memory_order_release);
}

uint64_t ProcessGroup::beginOp(OpType op, OpDesc& d) {
  if (revokedSet_.load(std::memory_order_acquire)) {
    std::rethrow_exception(detail::prefixed(
        revokedError(), detail::str(toString(op), ": process group ", name(), " is unusable: ")));
  }
  if (std::exception_ptr e = brokenError()) {
    const std::string prefix = detail::str(toString(op), ": process group ", name(),
                                           " is unusable after an earlier error: ");
    std::rethrow_exception(detail::prefixed(e, prefix));
  }
  d.op = op;
  d.seq = seq_.fetch_add(1);
  const bool p2p = op == OpType::kSend || op == OpType::kRecv || op == OpType::kRecvAnySource;
  d.collSeq = p2p ? collSeq_ : collSeq_++;
  current_ = &d;
  pendingIssueNs_ = 0;
  if (diagConfig_.flightRecorderSize > 0) {
    FlightRecorder& rec = diagnostics().recorder();
    const int64_t now = FlightRecorder::nowNs();
    if (pendingRecord_ != FlightRecorder::kNoId && !pendingLinked_) {
      // The previous op's do*() threw instead of returning a Work.
      rec.onEnd(pendingRecord_, now,
                std::make_exception_ptr(Error("the backend refused the op at issue")));
    }
    pendingRecord_ = rec.record(d, now);
    pendingIssueNs_ = now;
  }
  pendingLinked_ = false;
  return d.seq;
}

int64_t ProcessGroup::currentIssueNs() const {
  return pendingIssueNs_ != 0 ? pendingIssueNs_ : FlightRecorder::nowNs();
}

void ProcessGroup::linkWork(Work& work) {
  if (current_ == nullptr || pendingRecord_ == FlightRecorder::kNoId || pendingLinked_) return;
  work.linkDiagnostics(diag_.get(), pendingRecord_);
  pendingLinked_ = true;
}

std::shared_ptr<Work> ProcessGroup::track(std::shared_ptr<Work> work, OpDesc& d) {
  current_ = nullptr;
  C10D_CHECK(work != nullptr, "backend ", backendName(), " returned no Work in group ", name());
  if (pendingRecord_ != FlightRecorder::kNoId) {
    // Unless the backend linked the Work itself (linkWork()); then only a Work still pending
    // takes a reference (one completed inline never touches the diagnostics again).
    if (pendingLinked_) {
      work->retainDiagnostics(diag_);
    } else {
      work->attachDiagnostics(diag_, pendingRecord_);
    }
    pendingRecord_ = FlightRecorder::kNoId;
    pendingLinked_ = false;
  }
  work->setDesc(std::move(d));
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroup::startCoalescing() {
  C10D_CHECK_ARG(!coalescing_, "startCoalescing: rank ", rank_, " of group ", name(),
                 " is already coalescing (call endCoalescing first)");
  coalescing_ = true;
  coalescingSeq_ = seq_.load();
  coalesced_.clear();
  try {
    doStartCoalescing();
  } catch (...) {
    coalescing_ = false;
    throw;
  }
}

std::shared_ptr<Work> ProcessGroup::endCoalescing() {
  C10D_CHECK_ARG(coalescing_, "endCoalescing: rank ", rank_, " of group ", name(),
                 " is not coalescing (call startCoalescing first)");
  coalescing_ = false;
  std::vector<std::shared_ptr<Work>> works;
  works.swap(coalesced_);
  const uint64_t seq = seq_.fetch_add(1);
  auto work = doEndCoalescing(std::move(works), seq);
  C10D_CHECK(work != nullptr, "backend ", backendName(), " returned no Work from endCoalescing");
  return work;
}

std::shared_ptr<Work> ProcessGroup::doEndCoalescing(std::vector<std::shared_ptr<Work>> works,
                                                    uint64_t seq) {
  return makeCompositeWork(std::move(works), OpType::kCoalesced, seq, name(), options_.timeout);
}

namespace {

constexpr Milliseconds kMaxBarrierWait{365LL * 24 * 3600 * 1000};

std::string joinRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

}  // namespace

// Keys, under this group's store: "mb/<n>/arrived/<rank>" set by each non-zero rank, and
// "mb/<n>/release" set by rank 0: "ok", or "fail:<message>" so the others fail fast.
void ProcessGroup::monitoredBarrier(Milliseconds timeout, bool waitAllRanks) {
  C10D_CHECK_ARG(timeout == kUnsetTimeout || timeout >= Milliseconds::zero(),
                 "monitoredBarrier: rank ", rank_, " of group ", name(), ": timeout ",
                 timeout.count(), " ms is negative");
  C10D_CHECK_ARG(store_ != nullptr, "monitoredBarrier: group ", name(), " has no store");
  const Milliseconds t = resolveTimeout(timeout);
  const uint64_t n = barrierCounter_++;
  if (size_ == 1) return;
  const std::string base = detail::str("mb/", n, "/");
  const std::string releaseKey = base + "release";

  if (rank_ != 0) {
    store_->set(detail::str(base, "arrived/", rank_), std::string("1"));
    // Rank 0 itself takes up to `t` to decide; waiting a grace period longer lets this rank
    // report rank 0's verdict (which ranks are missing) instead of a bare timeout.
    const Milliseconds grace = std::min(t, Milliseconds(5000));
    const Milliseconds wait = t > kMaxBarrierWait - grace ? kMaxBarrierWait : t + grace;
    try {
      store_->wait({releaseKey}, wait);
    } catch (const TimeoutError&) {
      C10D_THROW(TimeoutError, "monitoredBarrier: rank ", rank_, " of group ", name(),
                 " got no release from rank 0 within ", wait.count(), " ms (timeout ", t.count(),
                 " ms plus a grace period)");
    }
    const std::string v = store_->getString(releaseKey);
    if (v != "ok") {
      C10D_THROW(TimeoutError, "monitoredBarrier: rank ", rank_, " of group ", name(),
                 " released with a failure by rank 0: ", v.substr(v.find(':') + 1));
    }
    return;
  }

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + t;
  std::vector<int> missing;
  bool outOfTime = false;  // the timeout had passed before rank 0 could wait for a missing rank
  for (int r = 1; r < size_; ++r) {
    const std::string key = detail::str(base, "arrived/", r);
    const auto left =
        std::chrono::duration_cast<Milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= Milliseconds::zero()) {
      if (!store_->check({key})) {
        outOfTime = outOfTime || missing.empty();
        missing.push_back(r);
      }
    } else {
      try {
        store_->wait({key}, left);
      } catch (const TimeoutError&) {
        missing.push_back(r);
      }
    }
    if (!missing.empty() && !waitAllRanks) break;
  }
  if (missing.empty()) {
    store_->set(releaseKey, std::string("ok"));
    return;
  }
  // torch's wording (gloo's monitoredBarrier), which its tests and users match, then ours.
  const auto elapsed =
      std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - start);
  const std::string msg = detail::str(
      outOfTime
          ? detail::str("Rank 0 timed out in monitoredBarrier after ", elapsed.count(), " ms: ")
          : std::string(),
      missing.size() == 1 ? "Rank " : "Ranks ", joinRanks(missing),
      " failed to pass monitoredBarrier in ", t.count(), " ms (group ", name(), ": ",
      missing.size() == 1 ? "it" : "they", " did not arrive)");
  store_->set(releaseKey, "fail:" + msg);
  throw TimeoutError(msg);
}

C10D_NAMESPACE_END
}  // namespace c10d
