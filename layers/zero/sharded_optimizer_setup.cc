// The ShardedOptimizer's construction: local argument checks, the start-up comparison across ranks
// (every rank learns every other rank's problems before anyone throws, so a bad argument on one
// rank cannot leave the others hanging in a collective), the broadcast from rank 0, the partition
// and the kReduceToOwner buckets.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/error.h"
#include "core/broadcast_coalesced.h"
#include "layers/zero/sharded_optimizer.h"

namespace c10d {
namespace zero {

namespace {

// What a rank found wrong with its own arguments, shared through the start-up allgather.
enum Problem : int64_t {
  kNone = 0,
  kBadOptimizerOptions,  // OptimizerOptions::validate() threw
  kZeroBucketCap,
  kNotFloat32,    // detail: the dtype
  kNotCpu,        // detail: the device type
  kNullData,      // detail: numel
  kGradMismatch,  // detail: the grad's numel
  kGradDtype,     // detail: the grad's dtype
  kGradNotCpu,
  kNullGrad,
};

struct LocalProblem {
  Problem kind = kNone;
  int64_t index = -1;  // parameter, or -1 for the options
  int64_t detail = 0;
  std::string text;  // this rank's full message
};

// A 63-bit fingerprint of the optimizer's options (the fields its algorithm reads).
int64_t fingerprint(const optim::OptimizerOptions& o) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  const int algorithm = static_cast<int>(o.algorithm);
  mix(&algorithm, sizeof(algorithm));
  mix(&o.lr, sizeof(double));
  mix(&o.weightDecay, sizeof(double));
  if (o.algorithm == optim::Algorithm::kSgd) {
    mix(&o.momentum, sizeof(double));
    mix(&o.dampening, sizeof(double));
    const int nesterov = o.nesterov ? 1 : 0;
    mix(&nesterov, sizeof(nesterov));
  } else {
    mix(&o.beta1, sizeof(double));
    mix(&o.beta2, sizeof(double));
    mix(&o.eps, sizeof(double));
  }
  return static_cast<int64_t>(h >> 1);
}

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
  if (options_.gradReduction == ZeroOptions::GradReduction::kReduceToOwner) buildBuckets();
  allocateStaging();
  marked_.assign(params_.size(), 0);
  resetStep();
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::verifyAcrossRanks() {
  const std::string g = " (group " + group_->name() + ")";
  // 1. What is wrong on this rank, without throwing yet.
  LocalProblem local;
  auto found = [&local](Problem kind, int64_t index, int64_t detail, std::string text) {
    if (local.kind != kNone) return;
    local = LocalProblem{kind, index, detail, std::move(text)};
  };
  try {
    options_.optimizer.validate();
  } catch (const InvalidArgument& e) {
    found(kBadOptimizerOptions, -1, 0, e.what());
  }
  if (options_.gradReduction == ZeroOptions::GradReduction::kReduceToOwner &&
      options_.bucketCapBytes == 0) {
    found(kZeroBucketCap, -1, 0, "ZeroOptions::bucketCapBytes must be > 0");
  }
  for (size_t i = 0; i < params_.size() && local.kind == kNone; ++i) {
    const layers::Parameter& p = params_[i];
    const auto idx = static_cast<int64_t>(i);
    if (p.data.dtype != DataType::kFloat32) {
      found(kNotFloat32, idx, static_cast<int64_t>(p.data.dtype),
            detail::str(describe(i), " is ", toString(p.data.dtype),
                        ": ShardedOptimizer supports fp32 parameters only (no mixed-precision "
                        "master weights)"));
    } else if (!p.data.device.isCPU()) {
      found(kNotCpu, idx, 0,
            detail::str(describe(i), " is on ", toString(p.data.device),
                        ": ShardedOptimizer supports CPU parameters only"));
    } else if (p.data.data == nullptr && p.data.numel > 0) {
      found(kNullData, idx, static_cast<int64_t>(p.data.numel),
            detail::str(describe(i), " has null data and ", p.data.numel, " elements"));
    } else if (p.grad.numel != p.data.numel) {
      found(kGradMismatch, idx, static_cast<int64_t>(p.grad.numel),
            detail::str(describe(i), "'s grad has ", p.grad.numel, " elements, its data ",
                        p.data.numel));
    } else if (p.grad.dtype != DataType::kFloat32) {
      found(kGradDtype, idx, static_cast<int64_t>(p.grad.dtype),
            detail::str(describe(i), "'s grad is ", toString(p.grad.dtype), ", its data float32"));
    } else if (!p.grad.device.isCPU()) {
      found(kGradNotCpu, idx, 0,
            detail::str(describe(i), "'s grad is on ", toString(p.grad.device),
                        ": ShardedOptimizer supports CPU parameters only"));
    } else if (p.grad.data == nullptr && p.grad.numel > 0) {
      found(kNullGrad, idx, 0, detail::str(describe(i), " has a null grad"));
    }
  }

  // 2. Share counts, problems and options; every rank judges the same table.
  const int64_t np = static_cast<int64_t>(params_.size());
  const int64_t mode = static_cast<int64_t>(options_.gradReduction);
  const int64_t cap = static_cast<int64_t>(options_.bucketCapBytes);
  const int64_t opt = fingerprint(options_.optimizer);
  constexpr size_t kFields = 7;
  const std::vector<int64_t> all =
      allgatherInts({np, local.kind, local.index, local.detail, mode, cap, opt});
  auto field = [&](int r, size_t f) { return all[static_cast<size_t>(r) * kFields + f]; };

  // A rank with a problem of its own reports it in full; the others report the first rank's.
  if (local.kind != kNone) {
    C10D_THROW(InvalidArgument, "ShardedOptimizer: rank ", rank_, ": ", local.text, g);
  }
  for (int r = 0; r < size_; ++r) {
    const auto kind = static_cast<Problem>(field(r, 1));
    if (kind == kNone) continue;
    const int64_t index = field(r, 2);
    const int64_t det = field(r, 3);
    std::string what;
    switch (kind) {
      case kBadOptimizerOptions:
        what = "invalid optimizer options";
        break;
      case kZeroBucketCap:
        what = "ZeroOptions::bucketCapBytes is 0";
        break;
      case kNotFloat32:
        what = detail::str("parameter ", index, " is ", toString(static_cast<DataType>(det)),
                           " (fp32 only)");
        break;
      case kNotCpu:
        what = detail::str("parameter ", index, " is not on the CPU");
        break;
      case kNullData:
        what = detail::str("parameter ", index, " has null data and ", det, " elements");
        break;
      case kGradMismatch:
        what = detail::str("parameter ", index, "'s grad has ", det, " elements, not its data's");
        break;
      case kGradDtype:
        what = detail::str("parameter ", index, "'s grad is ", toString(static_cast<DataType>(det)),
                           ", not float32");
        break;
      case kGradNotCpu:
        what = detail::str("parameter ", index, "'s grad is not on the CPU");
        break;
      case kNullGrad:
        what = detail::str("parameter ", index, " has a null grad");
        break;
      case kNone:
        break;
    }
    C10D_THROW(InvalidArgument, "ShardedOptimizer: rank ", r, " rejected its arguments: ", what,
               " (see rank ", r, "'s error for details)", g);
  }

  int ref = 0;
  int bad = layers::firstDissenter(
      size_, [&](int r) { return field(r, 0); }, &ref);
  if (bad >= 0) {
    const int64_t first = std::min(field(bad, 0), field(ref, 0));
    C10D_THROW(InvalidArgument, "ShardedOptimizer: the model differs across ranks", g, ": rank ",
               bad, " has ", field(bad, 0), " parameters, rank ", ref, " has ", field(ref, 0),
               "; parameter ", first, first < np ? " (" + describe(first) + " here)" : "",
               " exists on only one of them");
  }
  bad = layers::firstDissenter(
      size_, [&](int r) { return field(r, 4); }, &ref);
  if (bad >= 0) {
    C10D_THROW(InvalidArgument, "ShardedOptimizer: ZeroOptions::gradReduction differs across ranks",
               g, ": rank ", bad, " uses ",
               gradReductionName(static_cast<ZeroOptions::GradReduction>(field(bad, 4))), ", rank ",
               ref, " uses ",
               gradReductionName(static_cast<ZeroOptions::GradReduction>(field(ref, 4))));
  }
  bad = layers::firstDissenter(
      size_, [&](int r) { return field(r, 5); }, &ref);
  if (bad >= 0 && options_.gradReduction == ZeroOptions::GradReduction::kReduceToOwner) {
    C10D_THROW(InvalidArgument,
               "ShardedOptimizer: ZeroOptions::bucketCapBytes differs across ranks", g, ": rank ",
               bad, " has ", field(bad, 5), ", rank ", ref, " has ", field(ref, 5),
               " (the buckets, hence the collectives, would not match)");
  }
  bad = layers::firstDissenter(
      size_, [&](int r) { return field(r, 6); }, &ref);
  if (bad >= 0) {
    C10D_THROW(InvalidArgument, "ShardedOptimizer: the optimizer options differ across ranks", g,
               ": rank ", bad, "'s differ from rank ", ref,
               "'s (this rank: ", options_.optimizer.describe(),
               "); every rank must step with the same options");
  }

  // 3. Same counts: compare every numel (dtypes are all fp32 by now).
  if (params_.empty()) return;
  std::vector<int64_t> mine;
  for (const layers::Parameter& p : params_) mine.push_back(static_cast<int64_t>(p.data.numel));
  const std::vector<int64_t> numels = allgatherInts(mine);
  const size_t n = params_.size();
  for (size_t k = 0; k < n; ++k) {
    auto numelOf = [&](int r) { return numels[static_cast<size_t>(r) * n + k]; };
    bad = layers::firstDissenter(size_, numelOf, &ref);
    if (bad < 0) continue;
    C10D_THROW(
        InvalidArgument, "ShardedOptimizer: ", describe(k), " differs across ranks", g, ": rank ",
        bad, " has ", numelOf(bad), " elements, rank ", ref, " has ", numelOf(ref),
        " elements (name as on this rank; every rank must pass the same parameters, in the same "
        "order, with the same shapes)");
  }
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
  shardGrad_ = std::make_shared<layers::Floats>(chunk_, 0.0f);
  shardParam_ = std::make_shared<layers::Floats>(chunk_, 0.0f);
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
  bucketOf_.assign(params_.size(), kNoBucket);
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t p : buckets[b].params) bucketOf_[p] = b;
  }
  buckets_ = std::move(buckets);
}

void ShardedOptimizer::allocateStaging() {
  // A round's N * R floats, or a whole bucket another rank owns. The second buffer only when
  // there is something to overlap: several rounds, or several buckets packed into staging.
  const size_t rounds = round_ == 0 ? 0 : (chunk_ + round_ - 1) / round_;
  size_t numel = static_cast<size_t>(size_) * round_;
  size_t staged = 0;
  for (const Bucket& b : buckets_) {
    if (b.owner != rank_) numel = std::max(numel, b.numel), ++staged;
  }
  const bool two = rounds > 1 || staged > 1;
  staging_[0] = std::make_shared<layers::Floats>(numel, 0.0f);
  staging_[1] = std::make_shared<layers::Floats>(two ? numel : 0, 0.0f);
}

std::vector<int64_t> ShardedOptimizer::allgatherInts(const std::vector<int64_t>& mine) {
  const size_t n = mine.size();
  auto in = std::make_shared<std::vector<int64_t>>(mine);
  auto out = std::make_shared<std::vector<int64_t>>(n * static_cast<size_t>(size_), 0);
  auto work = group_->allgatherIntoTensor(tensorOf(out->data(), out->size()),
                                          tensorOf(in->data(), in->size()),
                                          AllgatherOptions{options_.timeout});
  work->then([in, out](Work&) {});  // alive until the op completes, even if we time out
  waitWork(*work);                  // its errors name the op, sequence number and group
  return *out;
}

std::vector<size_t> ShardedOptimizer::numels() const {
  std::vector<size_t> out;
  out.reserve(params_.size());
  for (const layers::Parameter& p : params_) out.push_back(p.data.numel);
  return out;
}

}  // namespace zero
}  // namespace c10d
