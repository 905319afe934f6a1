// The Reducer's iteration: markReady -> bucket launches in order -> finalize. Construction and the
// collectives on metadata (start-up checks, rebuild order) are in reducer_setup.cc.
#include "c10d/layers/ddp/reducer.h"

#include <algorithm>
#include <chrono>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace ddp {

namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double seconds(int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

// Stores `t` into `slot` unless it already holds a time (the Work's callback won the race).
void recordDone(std::atomic<int64_t>& slot, int64_t t) {
  int64_t unset = 0;
  slot.compare_exchange_strong(unset, t);
}

}  // namespace

Reducer::~Reducer() = default;

void Reducer::resetIteration() {
  std::fill(marked_.begin(), marked_.end(), 0);
  numMarked_ = 0;
  nextBucket_ = 0;
  backwardStartNs_ = 0;
  readyOrder_.clear();
  saved_.clear();
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.ready = b.pending == 0;
    b.launched = false;
    b.work.reset();
    b.launchNs = 0;
    b.doneNs = std::make_shared<std::atomic<int64_t>>(0);
  }
}

void Reducer::markReady(size_t index) {
  MutexLock lock(mu_);
  markReadyLocked(index, nullptr);
}

void Reducer::markReady(size_t index, const Tensor& grad) {
  MutexLock lock(mu_);
  C10D_CHECK_ARG(options_.gradientAsBucketView, "Reducer::markReady(", index,
                 ", grad): a gradient outside the bucket needs "
                 "ReducerOptions::gradientAsBucketView; without it the Reducer reads the "
                 "Parameter's grad (call markReady(index))");
  markReadyLocked(index, &grad);
}

void Reducer::markReadyLocked(size_t index, const Tensor* grad) {
  broken_.check(group_->name());
  C10D_CHECK_ARG(index < params_.size(), "Reducer::markReady: parameter index ", index,
                 " out of range: the Reducer has ", params_.size(), " parameters (group ",
                 group_->name(), ")");
  if (grad != nullptr) {
    layers::checkGivenGradient("Reducer::markReady", params_, index, *grad, group_->name());
  }
  if (!requireSync_) {
    usedSinceSync_[index] = 1;  // accumulation: the framework keeps the gradient
    return;
  }
  if (marked_[index]) {
    C10D_THROW(InvalidArgument, "Reducer::markReady: ", describe(index),
               " was marked ready twice in iteration ", syncedIterations_ + 1, " (group ",
               group_->name(),
               "). Each parameter's gradient hook must fire once per backward; a parameter shared "
               "by several modules must be registered with the Reducer once.");
  }
  if (numMarked_ == 0) backwardStartNs_ = nowNs();
  marked_[index] = 1;
  ++numMarked_;
  usedSinceSync_[index] = 1;
  if (options_.rebuildBuckets && !options_.findUnusedParameters && !rebuilt_) {
    readyOrder_.push_back(index);
  }
  const Locator loc = locators_[index];
  Bucket& bucket = buckets_[loc.bucket];
  try {
    enterBucket(index, bucket.flat.view(loc.slot), grad);
    if (--bucket.pending == 0) {
      bucket.ready = true;
      launchReadyBuckets();
    }
  } catch (...) {
    broken_.fail("markReady(" + describe(index) + ")", std::current_exception());
  }
}

// torch's next_bucket rule: launch in index order, so every rank issues the same sequence of
// collectives whatever order its gradients became ready in.
void Reducer::launchReadyBuckets() {
  while (nextBucket_ < buckets_.size() && buckets_[nextBucket_].ready) launch(nextBucket_++);
}

// A gradient enters its bucket slot, averaged on the way as torch's DDP does
// (mark_variable_ready_dense): a gradient outside the slot is multiplied by 1 / world size while
// it is copied in; a gradient that already is the slot (gradientAsBucketView's steady state) is
// divided in place by the world size. The two differ in the last bit for many elements.
void Reducer::enterBucket(size_t param, const Tensor& slot, const Tensor* external) {
  const Tensor* from = external;
  if (from == nullptr && !options_.gradientAsBucketView) from = &params_[param].grad;
  if (scalesOnEntry(slot.dtype)) {
    if (from != nullptr) {
      ops_->multiply(slot, *from, 1.0 / static_cast<double>(group_->size()));
    } else {
      ops_->divide(slot, group_->size());
    }
  } else if (from != nullptr) {
    ops_->copy(slot, *from);
  }
}

bool Reducer::scalesOnEntry(DataType dtype) const {
  return !options_.commHook && options_.averaging == ReducerOptions::Averaging::kScaleThenSum &&
         isFloatingPoint(dtype) && group_->size() > 1;
}

void Reducer::prepareUnmarked(size_t param, const Tensor& slot) {
  if (usedSinceSync_[param]) {
    // Used in a no-sync micro-batch of this accumulation window: reduce what was accumulated.
    enterBucket(param, slot, nullptr);
    return;
  }
  if (options_.gradientAsBucketView) {
    // The slot is the framework's gradient: keep it, to restore if no rank used the parameter.
    auto it =
        saved_.emplace(param, layers::FlatBuffer(slot.dtype, slot.device, {slot.numel}, *ops_));
    ops_->copy(it.first->second.view(0), slot);
  }
  ops_->zero(slot);
}

void Reducer::launch(size_t b) {
  Bucket& bucket = buckets_[b];
  for (size_t k = 0; k < bucket.params.size(); ++k) {
    if (!marked_[bucket.params[k]]) prepareUnmarked(bucket.params[k], bucket.flat.view(k));
  }
  bucket.launchNs = nowNs();
  bucket.launched = true;
  std::shared_ptr<Work> work;
  if (options_.commHook) {
    GradBucket gb;
    gb.index = b;
    gb.isLast = b + 1 == buckets_.size();
    gb.buffer = bucket.flat.tensor();
    gb.parameters = bucket.params;
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      gb.offsets.push_back(bucket.flat.offset(k));
      gb.numels.push_back(bucket.flat.numel(k));
    }
    work = options_.commHook(*group_, gb);
    C10D_CHECK(work != nullptr, "the comm hook returned no Work for bucket ", b);
  } else {
    work =
        group_->allreduce(bucket.flat.tensor(), AllreduceOptions{ReduceOp::SUM, options_.timeout});
  }
  // The callback keeps the bucket's memory alive until the op completes, whatever happens to the
  // Reducer, and timestamps the completion for the stats.
  auto done = bucket.doneNs;
  auto keep = bucket.flat.storage();
  work->then([done, keep](Work&) { recordDone(*done, nowNs()); });
  bucket.work = std::move(work);
}

void Reducer::waitWork(Work& work) {
  work.wait(options_.timeout);
}

std::shared_ptr<Work> Reducer::launchUsedMap(layers::FlatBuffer* staged) {
  std::vector<int32_t> used(usedSinceSync_.begin(), usedSinceSync_.end());
  *staged = layers::FlatBuffer(DataType::kInt32, commDevice_, {used.size()}, *ops_);
  ops_->upload(staged->tensor(), used.data());
  auto work =
      group_->allreduce(staged->tensor(), AllreduceOptions{ReduceOp::SUM, options_.timeout});
  auto keep = staged->storage();
  work->then([keep](Work&) {});
  return work;
}

IterationStats Reducer::finalize() {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  IterationStats st;
  if (!requireSync_) {
    st.iteration = syncedIterations_;
    lastStats_ = st;
    return st;
  }
  const int64_t finStart = nowNs();
  const size_t n = params_.size();
  if (!options_.findUnusedParameters && numMarked_ < n) {
    std::string list;
    size_t listed = 0;
    for (size_t i = 0; i < n; ++i) {
      if (marked_[i]) continue;
      if (listed == 8) {
        list += ", ...";
        break;
      }
      list += (listed++ ? ", " : "") + describe(i);
    }
    const std::string msg = detail::str(
        "Reducer::finalize: expected to have finished reduction in iteration ",
        syncedIterations_ + 1, " (group ", group_->name(), "), but ", n - numMarked_, " of ", n,
        " parameters were never marked ready: ", list,
        ". This means the module has parameters that were not used in producing the loss: set "
        "ReducerOptions::findUnusedParameters = true, or make backward call markReady() for every "
        "parameter once per iteration.");
    broken_.fail("finalize", std::make_exception_ptr(InvalidArgument(msg)));
  }
  try {
    st.synced = true;
    st.bucketsLaunchedEarly = nextBucket_;
    std::vector<int32_t> globalUsed;
    int64_t waitedNs = 0;
    layers::FlatBuffer usedMap;
    std::shared_ptr<Work> usedWork;
    if (options_.findUnusedParameters) {
      for (Bucket& b : buckets_) b.ready = true;
      launchReadyBuckets();
      // After the buckets on every rank; reduced while we wait for them.
      usedWork = launchUsedMap(&usedMap);
    }
    C10D_CHECK_EQ(nextBucket_, buckets_.size(), "every bucket launched at finalize");
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const int64_t t0 = nowNs();
      waitWork(*buckets_[b].work);
      const int64_t t1 = nowNs();
      waitedNs += t1 - t0;
      recordDone(*buckets_[b].doneNs, t1);
    }
    if (options_.findUnusedParameters) {
      const int64_t t0 = nowNs();
      waitWork(*usedWork);
      waitedNs += nowNs() - t0;
      globalUsed.resize(n);
      ops_->download(globalUsed.data(), usedMap.tensor());
      for (size_t i = 0; i < n; ++i) {
        st.locallyUnusedParameters += usedSinceSync_[i] ? 0 : 1;
        st.globallyUnusedParameters += globalUsed[i] == 0 ? 1 : 0;
      }
    }
    const int64_t ws = group_->size();
    for (Bucket& bucket : buckets_) {
      if (!options_.commHook && !scalesOnEntry(bucket.flat.dtype())) {
        ops_->divide(bucket.flat.tensor(), ws);
      }
      for (size_t k = 0; k < bucket.params.size(); ++k) {
        const size_t p = bucket.params[k];
        const bool globallyUnused = !globalUsed.empty() && globalUsed[p] == 0;
        if (!options_.gradientAsBucketView) {
          if (!globallyUnused) ops_->copy(params_[p].grad, bucket.flat.view(k));
        } else if (globallyUnused) {
          auto it = saved_.find(p);
          if (it != saved_.end()) ops_->copy(bucket.flat.view(k), it->second.view(0));
        }
      }
      const int64_t launch = bucket.launchNs;
      const int64_t done = std::max(bucket.doneNs->load(), launch);
      st.bucketBytes.push_back(bucket.flat.nbytes());
      if (options_.recordComm) {
        st.comm.push_back({"allreduce bucket " + std::to_string(st.bucketBytes.size() - 1),
                           bucket.flat.nbytes(), launch, done});
      }
      st.commSeconds += seconds(done - launch);
      st.overlappedSeconds += seconds(std::max<int64_t>(0, std::min(done, finStart) - launch));
      st.bucketsDoneBeforeFinalize += done <= finStart ? 1 : 0;
    }
    st.finalizeWaitSeconds = seconds(waitedNs);
    st.backwardSeconds = numMarked_ > 0 ? seconds(finStart - backwardStartNs_) : 0.0;
    st.iteration = ++syncedIterations_;
    maybeRebuild(st);
  } catch (...) {
    broken_.fail("finalize", std::current_exception());
  }
  resetIteration();
  std::fill(usedSinceSync_.begin(), usedSinceSync_.end(), 0);
  lastStats_ = st;
  return st;
}

void Reducer::setSync(bool sync) {
  if (!sync && requireSync_ && numMarked_ > 0) {
    C10D_THROW(InvalidArgument, "Reducer::noSync: entered in the middle of synced iteration ",
               syncedIterations_ + 1, " (", numMarked_, " of ", params_.size(),
               " parameters already marked ready, group ", group_->name(),
               "); call finalize() first");
  }
  requireSync_ = sync;
}

void Reducer::setRequireGradSync(bool sync) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  setSync(sync);
}

bool Reducer::requireGradSync() const {
  MutexLock lock(mu_);
  return requireSync_;
}

Reducer::NoSyncGuard Reducer::noSync() {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  const bool previous = requireSync_;
  setSync(false);
  return NoSyncGuard(this, previous);
}

Reducer::NoSyncGuard::~NoSyncGuard() {
  if (reducer_ == nullptr) return;
  MutexLock lock(reducer_->mu_);
  reducer_->requireSync_ = previous_;
}

Tensor Reducer::gradView(size_t index) const {
  MutexLock lock(mu_);
  C10D_CHECK_ARG(options_.gradientAsBucketView,
                 "Reducer::gradView: needs ReducerOptions::gradientAsBucketView (", describe(index),
                 ")");
  C10D_CHECK_ARG(index < params_.size(), "Reducer::gradView: parameter index ", index,
                 " out of range: the Reducer has ", params_.size(), " parameters");
  const Locator loc = locators_[index];
  return buckets_[loc.bucket].flat.view(loc.slot);
}

std::vector<BucketInfo> Reducer::buckets() const {
  MutexLock lock(mu_);
  std::vector<BucketInfo> out;
  for (const Bucket& b : buckets_) {
    out.push_back(
        BucketInfo{b.flat.dtype(), b.flat.device(), b.params, b.flat.numel(), b.flat.nbytes()});
  }
  return out;
}

uint64_t Reducer::layoutVersion() const {
  MutexLock lock(mu_);
  return layoutVersion_;
}

IterationStats Reducer::lastStats() const {
  MutexLock lock(mu_);
  return lastStats_;
}

}  // namespace ddp
C10D_NAMESPACE_END
}  // namespace c10d
