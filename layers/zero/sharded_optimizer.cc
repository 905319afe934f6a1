// The ShardedOptimizer's step (stage gradients -> reduce to owners -> average and step the shard
// -> allgather parameters) and its checkpoint state. Construction, the partition and the buckets
// are in sharded_optimizer_setup.cc.
#include "layers/zero/sharded_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/error.h"

namespace c10d {
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
  nextBucket_ = 0;
  launchedEarly_ = 0;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
}

void ShardedOptimizer::stage(size_t index) {
  const layers::Parameter& p = params_[index];
  if (p.data.numel == 0) return;
  float* dst = flat_->data() + static_cast<size_t>(owner_[index]) * chunk_ + offset_[index];
  std::memcpy(dst, p.grad.data, p.data.numel * sizeof(float));
}

void ShardedOptimizer::markReady(size_t index) {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  C10D_CHECK_ARG(index < params_.size(), "ShardedOptimizer::markReady: parameter index ", index,
                 " out of range: the optimizer has ", params_.size(), " parameters (group ",
                 group_->name(), ")");
  if (marked_[index]) {
    C10D_THROW(InvalidArgument, "ShardedOptimizer::markReady: ", describe(index),
               " was marked ready twice in step ", optimizer_->steps() + 1, " (group ",
               group_->name(),
               "). Each parameter's gradient hook must fire once per backward; a parameter shared "
               "by several modules must be registered once.");
  }
  marked_[index] = 1;
  try {
    stage(index);
    if (!buckets_.empty() && bucketOf_[index] != kNoBucket) {
      Bucket& bucket = buckets_[bucketOf_[index]];
      if (--bucket.pending == 0) {
        launchReadyBuckets();
        launchedEarly_ = nextBucket_;
      }
    }
  } catch (...) {
    broken_.fail("markReady(" + describe(index) + ")", std::current_exception());
  }
}

// The Reducer's next_bucket rule: launch in index order, so every rank issues the same sequence of
// collectives whatever order its gradients became ready in.
void ShardedOptimizer::launchReadyBuckets() {
  while (nextBucket_ < buckets_.size() && buckets_[nextBucket_].pending == 0) {
    Bucket& b = buckets_[nextBucket_++];
    const size_t base = static_cast<size_t>(b.owner) * chunk_ + b.offset;
    b.work = group_->reduce(floats(*flat_, base, b.numel),
                            ReduceOptions{ReduceOp::SUM, b.owner, options_.timeout});
    auto keep = flat_;
    b.work->then([keep](Work&) {});  // the buffer outlives the op, whatever happens to us
  }
}

ZeroStepStats ShardedOptimizer::step() {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  ZeroStepStats st;
  const uint64_t stepNumber = optimizer_->steps() + 1;  // for messages
  st.flatBytes = flat_->size() * sizeof(float);
  try {
    // 1. Stage what backward did not mark.
    for (size_t p = 0; p < params_.size(); ++p) {
      if (!marked_[p]) stage(p);
    }
    // 2. Reduce to the owners.
    const size_t mine = shardNumel_[static_cast<size_t>(rank_)];
    float* grads = shardGrad_->data();
    if (chunk_ > 0) {
      if (buckets_.empty()) {
        auto work = group_->reduceScatterTensor(
            floats(*shardGrad_, 0, chunk_), floats(*flat_, 0, flat_->size()),
            ReduceScatterOptions{ReduceOp::SUM, options_.timeout});
        auto keepIn = flat_;
        auto keepOut = shardGrad_;
        work->then([keepIn, keepOut](Work&) {});
        const auto t0 = Clock::now();
        waitWork(*work);
        st.commSeconds += secondsSince(t0);
        st.bucketsLaunched = 1;
      } else {
        st.bucketsLaunchedEarly = launchedEarly_;
        for (Bucket& b : buckets_) b.pending = 0;
        launchReadyBuckets();
        const auto t0 = Clock::now();
        for (Bucket& b : buckets_) waitWork(*b.work);
        st.commSeconds += secondsSince(t0);
        st.bucketsLaunched = buckets_.size();
        grads = flat_->data() + static_cast<size_t>(rank_) * chunk_;
      }
    }
    // 3. Average, and step this rank's shard on the parameters' current values.
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
    optimizer_->step(shardParam, grads);
    st.stepSeconds = secondsSince(t1);
    // 4. Every rank's updated shard to every rank, then into the parameters.
    if (chunk_ > 0) {
      auto work = group_->allgatherIntoTensor(floats(*flat_, 0, flat_->size()),
                                              floats(*shardParam_, 0, chunk_),
                                              AllgatherOptions{options_.timeout});
      auto keepIn = shardParam_;
      auto keepOut = flat_;
      work->then([keepIn, keepOut](Work&) {});
      const auto t2 = Clock::now();
      waitWork(*work);
      st.commSeconds += secondsSince(t2);
    }
    for (size_t p = 0; p < params_.size(); ++p) {
      if (params_[p].data.numel == 0) continue;
      const float* src = flat_->data() + static_cast<size_t>(owner_[p]) * chunk_ + offset_[p];
      std::memcpy(params_[p].data.data, src, params_[p].data.numel * sizeof(float));
    }
  } catch (...) {
    broken_.fail("step " + std::to_string(stepNumber), std::current_exception());
  }
  resetStep();
  st.step = optimizer_->steps();
  st.localStateBytes = optimizer_->stateBytes();
  const layers::LayerMemory memory = layers::layerMemory();
  st.layerBytes = static_cast<size_t>(memory.liveBytes);
  st.layerPeakBytes = static_cast<size_t>(memory.peakBytes);
  lastStats_ = st;
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
}  // namespace c10d
