// The ShardedOptimizer's step (gradients reduced to their owners in rounds or buckets -> average
// and step the shard -> parameters allgathered in rounds) and its checkpoint state. Construction,
// the partition and the buckets are in sharded_optimizer_setup.cc.
#include "c10d/layers/zero/sharded_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Tensor floats(layers::Floats& v, size_t offset, size_t count) {
  return tensorOf(v.data() + offset, count);
}

}  // namespace

void ShardedOptimizer::waitWork(Work& work) {
  work.wait(options_.timeout);
}

void ShardedOptimizer::resetStep() {
  std::fill(marked_.begin(), marked_.end(), 0);
  for (size_t p = 0; p < params_.size(); ++p) {
    unpacked_[p] = bucketsOf_[p].size();
    gradOf_[p] = params_[p].grad.ptr<float>();
  }
  nextBucket_ = 0;
  launchedEarly_ = 0;
  markWaitSeconds_ = 0;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
}

template <typename Fn>
void ShardedOptimizer::forEachPiece(int r, size_t begin, size_t end, Fn&& fn) const {
  const std::vector<size_t>& shard = shards_[static_cast<size_t>(r)];
  // The first member ending after `begin` (members are back to back, so their ends ascend).
  auto it = std::upper_bound(shard.begin(), shard.end(), begin, [this](size_t pos, size_t p) {
    return pos < offset_[p] + params_[p].data.numel;
  });
  for (; it != shard.end() && offset_[*it] < end; ++it) {
    const size_t p = *it;
    const size_t lo = std::max(begin, offset_[p]);
    const size_t hi = std::min(end, offset_[p] + params_[p].data.numel);
    if (hi > lo) fn(p, lo - offset_[p], hi - lo, lo);
  }
}

void ShardedOptimizer::packGrads(int r, size_t begin, size_t count, float* dst) const {
  forEachPiece(r, begin, begin + count, [&](size_t p, size_t pos, size_t n, size_t at) {
    mu_.assertHeld();  // by the caller (a lambda is analysed on its own)
    std::memcpy(dst + (at - begin), gradOf_[p] + pos, n * sizeof(float));
  });
}

void ShardedOptimizer::unpackParams(int r, size_t begin, size_t count, const float* src) const {
  forEachPiece(r, begin, begin + count, [&](size_t p, size_t pos, size_t n, size_t at) {
    std::memcpy(params_[p].data.ptr<float>() + pos, src + (at - begin), n * sizeof(float));
  });
}

void ShardedOptimizer::finishStaging(size_t i) {
  InFlight& f = inFlight_[i];
  if (!f.work) return;
  auto work = std::move(f.work);
  waitWork(*work);
  f.keep.release();
  if (f.scatterBucket != kNoBucket) {  // this rank's part of the summed bucket into its shard
    const Bucket& b = buckets_[f.scatterBucket];
    const auto me = static_cast<size_t>(rank_);
    if (b.partNumel[me] > 0) {  // the output follows the N parts
      std::memcpy(shardGrad_->data() + b.partBegin[me],
                  staging_[i]->data() + static_cast<size_t>(size_) * b.numel,
                  b.partNumel[me] * sizeof(float));
    }
    f.scatterBucket = kNoBucket;
  }
}

size_t ShardedOptimizer::acquireStaging() {
  finishStaging(nextStaging_);
  return nextStaging_;
}

void ShardedOptimizer::useStaging(size_t i, std::shared_ptr<Work> work,
                                  std::vector<std::shared_ptr<layers::Floats>> held,
                                  size_t scatterBucket) {
  InFlight& f = inFlight_[i];
  f.keep = layers::KeepAlive(*work, std::move(held));
  f.work = std::move(work);
  f.scatterBucket = scatterBucket;
  if (!staging_[1]->empty()) nextStaging_ = 1 - i;
}

void ShardedOptimizer::drainStaging() {
  for (size_t k = 0; k < 2; ++k) {  // the older one first
    finishStaging(nextStaging_);
    nextStaging_ = 1 - nextStaging_;
  }
  nextStaging_ = 0;
}

void ShardedOptimizer::notifyReleased(const std::vector<size_t>& released) const {
  if (!options_.onGradReleased) return;
  for (size_t p : released) options_.onGradReleased(p);
}

void ShardedOptimizer::markReady(size_t index) {
  markReadyImpl(index, nullptr);
}

void ShardedOptimizer::markReady(size_t index, Tensor grad) {
  markReadyImpl(index, &grad);
}

void ShardedOptimizer::markReadyImpl(size_t index, const Tensor* grad) {
  std::vector<size_t> released;
  {
    MutexLock lock(mu_);
    broken_.check(group_->name());
    C10D_CHECK_ARG(index < params_.size(), "ShardedOptimizer::markReady: parameter index ", index,
                   " out of range: the optimizer has ", params_.size(), " parameters (group ",
                   group_->name(), ")");
    if (marked_[index]) {
      C10D_THROW(InvalidArgument, "ShardedOptimizer::markReady: ", describe(index),
                 " was marked ready twice in step ", optimizer_->steps() + 1, " (group ",
                 group_->name(),
                 "). Each parameter's gradient hook must fire once per backward; a parameter "
                 "shared by several modules must be registered once.");
    }
    if (grad != nullptr) {
      layers::checkGivenGradient("ShardedOptimizer::markReady", params_, index, *grad,
                                 group_->name());
      gradOf_[index] = grad->ptr<float>();
    }
    marked_[index] = 1;
    try {
      if (bucketsOf_[index].empty()) released.push_back(index);  // nothing to read
      for (size_t b : bucketsOf_[index]) --buckets_[b].pending;
      launchReadyBuckets(released);
      launchedEarly_ = nextBucket_;
    } catch (...) {
      broken_.fail("markReady(" + describe(index) + ")", std::current_exception());
    }
  }
  notifyReleased(released);
}

// The Reducer's next_bucket rule: launch in index order, so every rank issues the same sequence of
// collectives whatever order its gradients became ready in.
void ShardedOptimizer::launchReadyBuckets(std::vector<size_t>& released) {
  while (nextBucket_ < buckets_.size() && buckets_[nextBucket_].pending == 0) {
    const size_t b = nextBucket_++;
    launchBucket(b);
    for (size_t p : buckets_[b].params) {
      if (--unpacked_[p] == 0) released.push_back(p);
    }
  }
}

void ShardedOptimizer::launchBucket(size_t index) {
  Bucket& b = buckets_[index];
  const auto t0 = Clock::now();
  if (options_.gradReduction == ZeroOptions::GradReduction::kReduceScatter) {
    // Rank r's part at r * width, zero-padded to the widest part.
    const size_t n = static_cast<size_t>(size_);
    const size_t width = b.numel;
    const size_t i = acquireStaging();
    markWaitSeconds_ += secondsSince(t0);
    float* in = staging_[i]->data();
    for (size_t r = 0; r < n; ++r) {
      packGrads(static_cast<int>(r), b.partBegin[r], b.partNumel[r], in + r * width);
      std::fill(in + r * width + b.partNumel[r], in + (r + 1) * width, 0.0f);
    }
    // This rank's sum lands straight in its shard when its part is the widest (no padding);
    // else after the N parts in the staging buffer, copied into the shard once the collective
    // completes.
    const auto me = static_cast<size_t>(rank_);
    const bool direct = b.partNumel[me] == width;
    const Tensor out = direct ? floats(*shardGrad_, b.partBegin[me], width)
                              : floats(*staging_[i], n * width, width);
    const int64_t issued = events_.stamp();
    auto work = group_->reduceScatterTensor(out, floats(*staging_[i], 0, n * width),
                                            ReduceScatterOptions{ReduceOp::SUM, options_.timeout});
    events_.launched("reduce-scatter bucket", index, n * width * sizeof(float), issued, *work);
    useStaging(i, std::move(work), {staging_[i], shardGrad_}, direct ? kNoBucket : index);
    return;
  }
  if (b.owner == rank_) {  // reduced in place, in this rank's shard of gradients
    packGrads(b.owner, b.offset, b.numel, shardGrad_->data() + b.offset);
    const int64_t issued = events_.stamp();
    b.work = group_->reduce(floats(*shardGrad_, b.offset, b.numel),
                            ReduceOptions{ReduceOp::SUM, b.owner, options_.timeout});
    events_.launched("reduce bucket", index, b.numel * sizeof(float), issued, *b.work);
    b.keep = layers::KeepAlive(*b.work, {shardGrad_});
    return;
  }
  const size_t i = acquireStaging();
  markWaitSeconds_ += secondsSince(t0);
  packGrads(b.owner, b.offset, b.numel, staging_[i]->data());
  const int64_t issued = events_.stamp();
  auto work = group_->reduce(floats(*staging_[i], 0, b.numel),
                             ReduceOptions{ReduceOp::SUM, b.owner, options_.timeout});
  events_.launched("reduce bucket", index, b.numel * sizeof(float), issued, *work);
  useStaging(i, std::move(work), {staging_[i]}, kNoBucket);
}

// Round t: elements [t*R, t*R + R) of every shard; rank r's part at r * R' of the staging buffer
// (R' = R, or what is left of S in the last round). A round reaching past this rank's shard
// sends the zero tail of shardParam_.
void ShardedOptimizer::allgatherRounds(ZeroStepStats& st) {
  const size_t n = static_cast<size_t>(size_);
  const size_t mine = shardNumel_[static_cast<size_t>(rank_)];
  struct Round {
    size_t begin = 0;
    size_t count = 0;
    std::shared_ptr<Work> work;
    layers::KeepAlive keep;
  };
  Round slots[2];
  auto finish = [&](size_t k) {
    mu_.assertHeld();  // by this function (a lambda is analysed on its own)
    Round& f = slots[k];
    if (!f.work) return;
    waitWork(*f.work);
    f.keep.release();
    for (size_t r = 0; r < n; ++r) {
      unpackParams(static_cast<int>(r), f.begin, f.count, staging_[k]->data() + r * f.count);
    }
    f.work.reset();
  };
  const size_t buffers = staging_[1]->empty() ? 1 : 2;
  size_t k = 0;
  for (size_t begin = 0; begin < chunk_; begin += round_, k = (k + 1) % buffers) {
    finish(k);  // round t - 2 used this buffer
    Round& f = slots[k];
    f.begin = begin;
    f.count = std::min(round_, chunk_ - begin);
    // Past this rank's shard: the zero tail (min(R, S - S_r) floats; never written).
    const size_t at = std::min(begin, mine);
    const int64_t issued = events_.stamp();
    f.work = group_->allgatherIntoTensor(floats(*staging_[k], 0, n * f.count),
                                         floats(*shardParam_, at, f.count),
                                         AllgatherOptions{options_.timeout});
    events_.launched("allgather round", st.rounds, n * f.count * sizeof(float), issued, *f.work);
    f.keep = layers::KeepAlive(*f.work, {shardParam_, staging_[k]});
    ++st.rounds;
  }
  finish(k);  // the older of the two first
  finish((k + 1) % buffers);
}

ZeroStepStats ShardedOptimizer::step() {
  std::vector<size_t> released;
  ZeroStepStats st;
  {
    MutexLock lock(mu_);
    broken_.check(group_->name());
    const uint64_t stepNumber = optimizer_->steps() + 1;  // for messages
    st.shardBytes = (shardGrad_->size() + shardParam_->size()) * sizeof(float);
    st.stagingBytes = 0;
    for (size_t i = 0; i < 2; ++i) {
      st.stagingBytes += staging_[i]->size() * sizeof(float);
    }
    for (size_t p = 0; p < params_.size(); ++p) {
      C10D_CHECK_ARG(marked_[p] || gradOf_[p] != nullptr || params_[p].data.numel == 0,
                     "ShardedOptimizer::step: ", describe(p), " has no grad tensor and was not ",
                     "given a gradient with markReady(", p, ", grad) in step ", stepNumber,
                     " (group ", group_->name(), ")");
    }
    try {
      // 1. Reduce to the owners: the buckets not launched by markReady() now.
      const size_t mine = shardNumel_[static_cast<size_t>(rank_)];
      float* grads = shardGrad_->data();
      const auto t0 = Clock::now();
      st.bucketsLaunchedEarly = launchedEarly_;
      for (size_t p = 0; p < params_.size(); ++p) {
        if (!marked_[p] && bucketsOf_[p].empty()) released.push_back(p);
      }
      for (Bucket& b : buckets_) b.pending = 0;
      launchReadyBuckets(released);
      for (Bucket& b : buckets_) {
        if (!b.work) continue;
        waitWork(*b.work);
        b.keep.release();
      }
      drainStaging();
      st.bucketsLaunched = buckets_.size();
      st.commSeconds += secondsSince(t0);
      st.markWaitSeconds = markWaitSeconds_;
      // 2. Average, and step this rank's shard on the parameters' current values.
      const auto t1 = Clock::now();
      float* shardParam = shardParam_->data();
      for (size_t p : shards_[static_cast<size_t>(rank_)]) {
        if (params_[p].data.numel == 0) continue;
        std::memcpy(shardParam + offset_[p], params_[p].data.data,
                    params_[p].data.numel * sizeof(float));
      }
      if (size_ > 1) {
        const auto n = static_cast<float>(size_);
        for (size_t i = 0; i < mine; ++i) grads[i] /= n;
      }
      if (options_.clip.maxNorm > 0) {
        st.gradNorm = clipGradNorm(*group_, grads, mine, options_.clip, options_.timeout);
      }
      optimizer_->step(shardParam, grads, spans_);
      st.stepSeconds = secondsSince(t1);
      // 3. Every rank's updated shard to every rank, into the parameters round by round.
      const auto t2 = Clock::now();
      allgatherRounds(st);
      st.commSeconds += secondsSince(t2);
    } catch (...) {
      broken_.fail("step " + std::to_string(stepNumber), std::current_exception());
    }
    resetStep();
    st.comm = events_.take();
    st.step = optimizer_->steps();
    st.localStateBytes = optimizer_->stateBytes();
    const layers::LayerMemory memory = layers::layerMemory();
    st.layerBytes = static_cast<size_t>(memory.liveBytes);
    st.layerPeakBytes = static_cast<size_t>(memory.peakBytes);
    lastStats_ = st;
  }
  notifyReleased(released);
  return st;
}

int ShardedOptimizer::ownerOf(size_t param) const {
  C10D_CHECK_ARG(param < params_.size(), "ShardedOptimizer::ownerOf: parameter index ", param,
                 " out of range: the optimizer has ", params_.size(), " parameters");
  return owner_[param];
}

std::vector<size_t> ShardedOptimizer::shardOf(int rank) const {
  C10D_CHECK_ARG(rank >= 0 && rank < size_, "ShardedOptimizer::shardOf: rank ", rank,
                 " out of range [0, ", size_, ")");
  return shards_[static_cast<size_t>(rank)];
}

size_t ShardedOptimizer::shardNumel(int rank) const {
  C10D_CHECK_ARG(rank >= 0 && rank < size_, "ShardedOptimizer::shardNumel: rank ", rank,
                 " out of range [0, ", size_, ")");
  return shardNumel_[static_cast<size_t>(rank)];
}

size_t ShardedOptimizer::localStateBytes() const {
  MutexLock lock(mu_);
  return optimizer_->stateBytes();
}

size_t ShardedOptimizer::fullStateBytes() const {
  size_t total = 0;
  for (size_t n : shardNumel_) total += n;
  return total * options_.optimizer.slotNames().size() * sizeof(float);
}

uint64_t ShardedOptimizer::steps() const {
  MutexLock lock(mu_);
  return optimizer_->steps();
}

std::vector<std::vector<size_t>> ShardedOptimizer::buckets() const {
  MutexLock lock(mu_);
  std::vector<std::vector<size_t>> out;
  for (const Bucket& b : buckets_) out.push_back(b.params);
  return out;
}

ZeroStepStats ShardedOptimizer::lastStats() const {
  MutexLock lock(mu_);
  return lastStats_;
}

optim::OptimizerState ShardedOptimizer::consolidateState(int dstRank) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  C10D_CHECK_ARG(dstRank >= 0 && dstRank < size_, "ShardedOptimizer::consolidateState: dstRank ",
                 dstRank, " out of range [0, ", size_, ") (group ", group_->name(), ")");
  optim::OptimizerState st;
  st.options = options_.optimizer;
  st.steps = optimizer_->steps();
  const size_t k = optimizer_->numSlots();
  for (size_t j = 0; j < k; ++j) st.slotNames.push_back(optimizer_->slotName(j));
  const size_t n = static_cast<size_t>(size_);
  // Slot by slot, each padded to the chunk: rank r's block of k * S floats lands at r * k * S.
  const size_t block = k * chunk_;
  auto recv = std::make_shared<layers::Floats>(rank_ == dstRank ? n * block : 0, 0.0f);
  if (block > 0) {
    try {
      auto send = std::make_shared<layers::Floats>(block, 0.0f);
      const size_t mine = optimizer_->numel();
      for (size_t j = 0; j < k; ++j) {
        std::copy(optimizer_->slot(j), optimizer_->slot(j) + mine, send->data() + j * chunk_);
      }
      std::vector<Tensor> outputs;
      if (rank_ == dstRank) {
        for (size_t r = 0; r < n; ++r) outputs.push_back(floats(*recv, r * block, block));
      }
      auto work = group_->gather(outputs, floats(*send, 0, block),
                                 GatherOptions{dstRank, options_.timeout});
      work->then([send, recv](Work&) {});
      waitWork(*work);
    } catch (...) {
      broken_.fail("consolidateState(" + std::to_string(dstRank) + ")", std::current_exception());
    }
  }
  if (rank_ != dstRank) return st;
  st.slots.resize(params_.size());
  for (size_t p = 0; p < params_.size(); ++p) {
    const size_t base = static_cast<size_t>(owner_[p]) * block + offset_[p];
    const size_t numel = params_[p].data.numel;
    for (size_t j = 0; j < k; ++j) {
      const float* src = recv->data() + base + j * chunk_;
      st.slots[p].emplace_back(src, src + numel);
    }
  }
  return st;
}

void ShardedOptimizer::loadState(const optim::OptimizerState& full) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  std::vector<std::string> names;
  for (const layers::Parameter& p : params_) names.push_back(p.name);
  full.checkCompatible(options_.optimizer, numels(),
                       "ShardedOptimizer::loadState (group " + group_->name() + ")", names);
  for (size_t p : shards_[static_cast<size_t>(rank_)]) {
    for (size_t j = 0; j < optimizer_->numSlots(); ++j) {
      std::copy(full.slots[p][j].begin(), full.slots[p][j].end(), optimizer_->slot(j) + offset_[p]);
    }
  }
  optimizer_->setSteps(full.steps);
}

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
