// The ShardedOptimizer's construction: the start-up comparison across ranks (start_up.h), the
// broadcast from rank 0, the partition, the kReduceToOwner buckets and the staging buffers.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/broadcast_coalesced.h"
#include "c10d/layers/zero/sharded_optimizer.h"
#include "c10d/layers/zero/start_up.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

namespace {

std::shared_ptr<ProcessGroup> checkedGroup(std::shared_ptr<ProcessGroup> group) {
  C10D_CHECK_ARG(group != nullptr, "ShardedOptimizer: null process group");
  return group;
}

}  // namespace

const char* gradReductionName(ZeroOptions::GradReduction mode) {
  switch (mode) {
    case ZeroOptions::GradReduction::kReduceScatter:
      return "reduce_scatter";
    case ZeroOptions::GradReduction::kReduceToOwner:
      return "reduce_to_owner";
  }
  return "?";
}

std::vector<int> partitionParameters(const std::vector<size_t>& numels, int worldSize) {
  C10D_CHECK_ARG(worldSize >= 1, "partitionParameters: world size ", worldSize, " < 1");
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first; stable, so equal sizes keep index order.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<size_t> load(static_cast<size_t>(worldSize), 0);
  std::vector<int> owner(numels.size(), 0);
  for (size_t p : order) {
    // min_element returns the first minimum: ties go to the lowest rank.
    const auto least = std::min_element(load.begin(), load.end());
    owner[p] = static_cast<int>(least - load.begin());
    *least += numels[p];
  }
  return owner;
}

ShardedOptimizer::ShardedOptimizer(std::vector<layers::Parameter> params,
                                   std::shared_ptr<ProcessGroup> group, ZeroOptions options)
    : params_(std::move(params)),
      group_(checkedGroup(std::move(group))),
      options_(std::move(options)),
      rank_(group_->rank()),
      size_(group_->size()) {
  verifyAcrossRanks();
  if (size_ > 1 && !params_.empty()) {
    std::vector<Tensor> tensors;
    for (const layers::Parameter& p : params_) tensors.push_back(p.data);
    waitWork(*broadcastCoalesced(*group_, tensors, kDefaultBroadcastBucketBytes, 0));
  }
  partition();
  if (options_.gradReduction == ZeroOptions::GradReduction::kReduceToOwner) {
    buildBuckets();
  } else {
    buildScatterBuckets();
  }
  indexBuckets();
  allocateStaging();
  events_.enable(options_.recordComm);
  marked_.assign(params_.size(), 0);
  unpacked_.assign(params_.size(), 0);
  gradOf_.assign(params_.size(), nullptr);
  resetStep();
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::verifyAcrossRanks() {
  StartUpCheck check;
  check.layer = "ShardedOptimizer";
  check.params = &params_;
  check.optimizer = &options_.optimizer;
  if (options_.bucketCapBytes == 0)
    check.optionsProblem = "ZeroOptions::bucketCapBytes must be > 0";
  try {
    optim::validateGroups(options_.paramGroups, params_.size());
    validate(options_.clip, "ZeroOptions::clip");
  } catch (const InvalidArgument& e) {
    if (check.optionsProblem.empty()) check.optionsProblem = e.what();
  }
  check.settings.push_back(
      {"ZeroOptions::gradReduction", static_cast<int64_t>(options_.gradReduction), [](int64_t v) {
         return std::string(gradReductionName(static_cast<ZeroOptions::GradReduction>(v)));
       }});
  // The buckets and the rounds follow from it.
  check.settings.push_back(
      {"ZeroOptions::bucketCapBytes", static_cast<int64_t>(options_.bucketCapBytes), nullptr});
  addSharedSettings(check, options_.paramGroups, options_.clip, "ZeroOptions");
  check.timeout = options_.timeout;
  zero::verifyAcrossRanks(*group_, check);
}

void ShardedOptimizer::partition() {
  const std::vector<size_t> sizes = numels();
  owner_ = partitionParameters(sizes, size_);
  shards_.assign(static_cast<size_t>(size_), {});
  shardNumel_.assign(static_cast<size_t>(size_), 0);
  offset_.assign(params_.size(), 0);
  for (size_t p = 0; p < params_.size(); ++p) {  // ascending: each shard in index order
    const auto r = static_cast<size_t>(owner_[p]);
    shards_[r].push_back(p);
    offset_[p] = shardNumel_[r];
    shardNumel_[r] += sizes[p];
  }
  chunk_ = *std::max_element(shardNumel_.begin(), shardNumel_.end());
  const size_t perRound = options_.bucketCapBytes / sizeof(float) / static_cast<size_t>(size_);
  round_ = std::min(chunk_, std::max<size_t>(perRound, 1));
  // A reduce-scatter bucket's N parts and this rank's output fit in one round's N * R floats.
  const auto n = static_cast<size_t>(size_);
  scatterWidth_ = std::max<size_t>(n * round_ / (n + 1), 1);
  const size_t mine = shardNumel_[static_cast<size_t>(rank_)];
  shardGrad_ = std::make_shared<layers::Floats>(mine, 0.0f);
  // A zero tail: an allgather round reaching past this rank's shard sends it zero-padded.
  shardParam_ = std::make_shared<layers::Floats>(mine + std::min(round_, chunk_ - mine), 0.0f);
  const std::vector<optim::Span> each =
      groupOfEach(options_.paramGroups, params_.size(), options_.optimizer);
  for (size_t p : shards_[static_cast<size_t>(rank_)]) {
    optim::appendSpan(spans_, offset_[p], offset_[p] + sizes[p], each[p].lr, each[p].weightDecay);
  }
  optimizer_ = std::make_unique<optim::FlatOptimizer>(options_.optimizer,
                                                      shardNumel_[static_cast<size_t>(rank_)]);
}

void ShardedOptimizer::buildBuckets() {
  // Per owner, walk its parameters from the last to the first (the order backward finishes them),
  // closing a bucket before it would exceed the cap (a parameter larger than the cap gets a bucket
  // of its own). A bucket is then a run of consecutive shard members: one contiguous range.
  std::vector<Bucket> buckets;
  for (int r = 0; r < size_; ++r) {
    const auto& shard = shards_[static_cast<size_t>(r)];
    Bucket cur;
    size_t bytes = 0;
    auto close = [&]() {
      if (cur.numel == 0) {  // nothing to move (no parameters, or only empty ones)
        cur = Bucket{};
        bytes = 0;
        return;
      }
      const size_t lowest = cur.params.back();
      cur.owner = r;
      cur.offset = offset_[lowest];
      buckets.push_back(std::move(cur));
      cur = Bucket{};
      bytes = 0;
    };
    for (size_t k = shard.size(); k-- > 0;) {
      const size_t p = shard[k];
      const size_t b = params_[p].data.numel * sizeof(float);
      if (!cur.params.empty() && bytes + b > options_.bucketCapBytes) close();
      cur.params.push_back(p);
      cur.numel += params_[p].data.numel;
      bytes += b;
    }
    close();
  }
  // Launch order: by lowest parameter index, descending, i.e. the order in which a backward that
  // marks parameters last to first completes them. The same on every rank.
  std::sort(buckets.begin(), buckets.end(),
            [](const Bucket& a, const Bucket& b) { return a.params.back() > b.params.back(); });
  buckets_ = std::move(buckets);
}

void ShardedOptimizer::buildScatterBuckets() {
  // Every parameter's elements from the last to the first, each to the current bucket until its
  // owner's part would exceed R elements; then the bucket closes and the next one starts. Walking
  // down, each rank's part grows downwards through consecutive members of its (ascending) shard,
  // so it stays one contiguous range of the shard.
  const size_t n = static_cast<size_t>(size_);
  if (round_ == 0) return;  // no elements at all
  Bucket cur;
  auto open = [&]() {
    cur = Bucket{};
    cur.partBegin.assign(n, 0);
    cur.partNumel.assign(n, 0);
  };
  auto close = [&]() {
    if (cur.params.empty()) return;
    cur.numel = *std::max_element(cur.partNumel.begin(), cur.partNumel.end());
    mu_.assertHeld();  // by this function (a lambda is analysed on its own)
    buckets_.push_back(std::move(cur));
    open();
  };
  open();
  for (size_t p = params_.size(); p-- > 0;) {
    const auto r = static_cast<size_t>(owner_[p]);
    size_t left = params_[p].data.numel;  // elements [0, left) of p are in no bucket yet
    while (left > 0) {
      if (cur.partNumel[r] == scatterWidth_) close();
      const size_t take = std::min(left, scatterWidth_ - cur.partNumel[r]);
      left -= take;
      cur.partBegin[r] = offset_[p] + left;
      cur.partNumel[r] += take;
      if (cur.params.empty() || cur.params.back() != p) cur.params.push_back(p);
    }
  }
  close();
}

void ShardedOptimizer::indexBuckets() {
  bucketsOf_.assign(params_.size(), {});
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t p : buckets_[b].params) bucketsOf_[p].push_back(b);
  }
}

void ShardedOptimizer::allocateStaging() {
  // A round's N * R floats, or a whole bucket another rank owns (a kReduceScatter bucket's N parts
  // and this rank's output, (N + 1) * W <= N * R unless R = 1). The second buffer only when there
  // is something to overlap: several rounds, or several buckets packed into staging.
  const size_t rounds = round_ == 0 ? 0 : (chunk_ + round_ - 1) / round_;
  const bool scatter = options_.gradReduction == ZeroOptions::GradReduction::kReduceScatter;
  const auto n = static_cast<size_t>(size_);
  size_t numel = n * round_;
  size_t staged = 0;
  for (const Bucket& b : buckets_) {
    if (scatter) {
      numel = std::max(numel, (n + 1) * b.numel);
      ++staged;
    } else if (b.owner != rank_) {
      numel = std::max(numel, b.numel);
      ++staged;
    }
  }
  const bool two = rounds > 1 || staged > 1;
  staging_[0] = std::make_shared<layers::Floats>(numel, 0.0f);
  staging_[1] = std::make_shared<layers::Floats>(two ? numel : 0, 0.0f);
}

std::vector<size_t> ShardedOptimizer::numels() const {
  std::vector<size_t> out;
  out.reserve(params_.size());
  for (const layers::Parameter& p : params_) out.push_back(p.data.numel);
  return out;
}

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
