// The Reducer's construction (argument checks, the start-up comparison across ranks, the initial
// broadcast), bucket building and the one-time rebuild, and the small metadata collectives.
#include <algorithm>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/broadcast_coalesced.h"
#include "c10d/layers/common/bucket_assignment.h"
#include "c10d/layers/ddp/reducer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace ddp {

namespace {

std::string describeEntry(int64_t numel, int64_t dtype) {
  return detail::str(numel, " elements of ", toString(static_cast<DataType>(dtype)));
}

}  // namespace

Reducer::Reducer(std::vector<Parameter> parameters, std::shared_ptr<ProcessGroup> group,
                 ReducerOptions options, std::vector<NamedBuffer> buffers)
    : params_(std::move(parameters)),
      buffers_(std::move(buffers)),
      group_(std::move(group)),
      options_(std::move(options)),
      ops_(options_.deviceOps ? options_.deviceOps : layers::cpuDeviceOps()) {
  C10D_CHECK_ARG(group_ != nullptr, "Reducer: null process group");
  C10D_CHECK_ARG(!params_.empty(), "Reducer: no parameters (group ", group_->name(), ")");
  commDevice_ = params_[0].data.device;
  validateArguments();
  marked_.assign(params_.size(), 0);
  usedSinceSync_.assign(params_.size(), 0);
  verifyAcrossRanks();
  broadcastInitialState();
  buildBuckets(assign(layers::reverseOrder(params_.size())));
  resetIteration();
}

void Reducer::validateArguments() const {
  const std::string g = " (group " + group_->name() + ")";
  C10D_CHECK_ARG(options_.bucketCapBytes > 0 && options_.firstBucketBytes > 0,
                 "Reducer: bucketCapBytes and firstBucketBytes must be > 0, got ",
                 options_.bucketCapBytes, " and ", options_.firstBucketBytes, g);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter& p = params_[i];
    C10D_CHECK_ARG(p.data.data != nullptr || p.data.numel == 0, "Reducer: ", describe(i),
                   " has null data and ", p.data.numel, " elements", g);
    C10D_CHECK_ARG(p.data.device.isCPU() || options_.deviceOps != nullptr, "Reducer: ", describe(i),
                   " is on ", toString(p.data.device),
                   ": pass ReducerOptions::deviceOps for that device", g);
    C10D_CHECK_ARG(group_->supportsDevice(p.data.device) &&
                       group_->supports(ReduceOp::SUM, p.data.dtype, p.data.device),
                   "Reducer: ", describe(i), " is ", toString(p.data.dtype), " on ",
                   toString(p.data.device), ", which backend ", group_->backendName(),
                   " cannot sum", g);
    if (!options_.gradientAsBucketView) {
      C10D_CHECK_ARG(p.grad.numel == p.data.numel && p.grad.dtype == p.data.dtype &&
                         p.grad.device == p.data.device,
                     "Reducer: ", describe(i), "'s grad (", p.grad.numel, " elements of ",
                     toString(p.grad.dtype), " on ", toString(p.grad.device),
                     ") does not match its data (", p.data.numel, " elements of ",
                     toString(p.data.dtype), " on ", toString(p.data.device), ")", g);
      C10D_CHECK_ARG(p.grad.data != nullptr || p.grad.numel == 0, "Reducer: ", describe(i),
                     " has a null grad; give every parameter a gradient tensor, or use "
                     "gradientAsBucketView",
                     g);
    }
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const NamedBuffer& b = buffers_[i];
    C10D_CHECK_ARG(b.data.data != nullptr || b.data.numel == 0, "Reducer: buffer ", i, " ('",
                   b.name, "') has null data and ", b.data.numel, " elements", g);
  }
  C10D_CHECK_ARG(group_->supports(ReduceOp::SUM, DataType::kInt32, commDevice_),
                 "Reducer: backend ", group_->backendName(), " cannot sum int32 on ",
                 toString(commDevice_), " (the used-parameter map)", g);
}

void Reducer::verifyAcrossRanks() {
  const int size = group_->size();
  const int64_t np = static_cast<int64_t>(params_.size());
  const int64_t nb = static_cast<int64_t>(buffers_.size());
  const std::vector<int64_t> counts = allgatherInts({np, nb});
  auto countOf = [&](int r) { return std::make_pair(counts[2 * r], counts[2 * r + 1]); };
  int ref = 0;
  int bad = layers::firstDissenter(size, countOf, &ref);
  if (bad >= 0) {
    const auto mine = std::make_pair(np, nb);
    const auto theirs = countOf(bad);
    const auto want = countOf(ref);
    const bool params = theirs.first != want.first;
    const int64_t first =
        params ? std::min(theirs.first, want.first) : std::min(theirs.second, want.second);
    std::string local;
    if (params && first < np) local = " (" + describe(static_cast<size_t>(first)) + " here)";
    if (!params && first < nb) local = " ('" + buffers_[first].name + "' here)";
    C10D_THROW(InvalidArgument, "Reducer: the model differs across ranks (group ", group_->name(),
               "): rank ", bad, " has ", theirs.first, " parameters and ", theirs.second,
               " buffers, rank ", ref, " has ", want.first, " and ", want.second, "; ",
               params ? "parameter " : "buffer ", first, local, " exists on only one of them",
               mine == want ? "" : " (this rank is one that differs)");
  }
  // Same counts everywhere: compare every (numel, dtype).
  std::vector<int64_t> entries;
  for (const Parameter& p : params_) {
    entries.push_back(static_cast<int64_t>(p.data.numel));
    entries.push_back(static_cast<int64_t>(p.data.dtype));
  }
  for (const NamedBuffer& b : buffers_) {
    entries.push_back(static_cast<int64_t>(b.data.numel));
    entries.push_back(static_cast<int64_t>(b.data.dtype));
  }
  const size_t stride = entries.size();
  if (stride == 0) return;
  const std::vector<int64_t> all = allgatherInts(entries);
  for (size_t k = 0; k < stride / 2; ++k) {
    auto entryOf = [&](int r) {
      return std::make_pair(all[r * stride + 2 * k], all[r * stride + 2 * k + 1]);
    };
    bad = layers::firstDissenter(size, entryOf, &ref);
    if (bad < 0) continue;
    const bool isParam = k < params_.size();
    const std::string what = isParam ? describe(k)
                                     : "buffer " + std::to_string(k - params_.size()) + " ('" +
                                           buffers_[k - params_.size()].name + "')";
    C10D_THROW(InvalidArgument, "Reducer: ", what, " differs across ranks (group ", group_->name(),
               "): rank ", bad, " has ", describeEntry(entryOf(bad).first, entryOf(bad).second),
               ", rank ", ref, " has ", describeEntry(entryOf(ref).first, entryOf(ref).second),
               " (name as on this rank; every rank must register the same parameters, in the "
               "same order, with the same shapes and dtypes)");
  }
}

void Reducer::broadcastInitialState() {
  if (group_->size() == 1) return;
  std::vector<Tensor> tensors;
  for (const Parameter& p : params_) tensors.push_back(p.data);
  for (const NamedBuffer& b : buffers_) tensors.push_back(b.data);
  auto work = broadcastCoalesced(*group_, tensors, kDefaultBroadcastBucketBytes, 0);
  waitWork(*work);
}

void Reducer::syncBuffers() {
  MutexLock lock(mu_);
  broken_.check(group_->name());
  if (!options_.broadcastBuffers || buffers_.empty() || group_->size() == 1) return;
  std::vector<Tensor> tensors;
  for (const NamedBuffer& b : buffers_) tensors.push_back(b.data);
  try {
    waitWork(*broadcastCoalesced(*group_, tensors, kDefaultBroadcastBucketBytes, 0));
  } catch (...) {
    broken_.fail("syncBuffers", std::current_exception());
  }
}

std::vector<layers::BucketSpec> Reducer::assign(const std::vector<size_t>& order) const {
  std::vector<layers::TensorSpec> specs;
  for (const Parameter& p : params_) specs.push_back({p.data.numel, p.data.dtype, p.data.device});
  return layers::assignBuckets(specs, order, {options_.firstBucketBytes, options_.bucketCapBytes});
}

void Reducer::buildBuckets(const std::vector<layers::BucketSpec>& assignment) {
  std::vector<Bucket> buckets(assignment.size());
  std::vector<Locator> locators(params_.size());
  for (size_t b = 0; b < assignment.size(); ++b) {
    std::vector<size_t> numels;
    for (size_t k = 0; k < assignment[b].members.size(); ++k) {
      const size_t p = assignment[b].members[k];
      numels.push_back(params_[p].data.numel);
      locators[p] = Locator{b, k};
    }
    buckets[b].flat = layers::FlatBuffer(assignment[b].dtype, assignment[b].device, numels, *ops_);
    buckets[b].params = assignment[b].members;
  }
  buckets_ = std::move(buckets);
  locators_ = std::move(locators);
}

void Reducer::maybeRebuild(IterationStats& st) {
  if (!options_.rebuildBuckets || options_.findUnusedParameters || rebuilt_) return;
  rebuilt_ = true;
  C10D_CHECK_EQ(readyOrder_.size(), params_.size(), "ready order of the first iteration");
  std::vector<int64_t> order(readyOrder_.begin(), readyOrder_.end());
  order = broadcastInts(std::move(order));
  std::vector<size_t> ord(order.begin(), order.end());
  // Compared before anything is allocated: the same layout keeps its buckets (building a second
  // set to discard it would hold every gradient twice for a moment).
  const auto assignment = assign(ord);  // checks that rank 0's order is a permutation
  bool same = assignment.size() == buckets_.size();
  for (size_t b = 0; same && b < buckets_.size(); ++b) {
    same = assignment[b].members == buckets_[b].params;
  }
  if (same) return;
  std::vector<Bucket> old = std::move(buckets_);
  const std::vector<Locator> oldLocators = locators_;
  buildBuckets(assignment);
  if (options_.gradientAsBucketView) {
    // The grads live in the buckets: move this iteration's results to their new places.
    for (size_t p = 0; p < params_.size(); ++p) {
      const Locator o = oldLocators[p];
      const Locator n = locators_[p];
      ops_->copy(buckets_[n.bucket].flat.view(n.slot), old[o.bucket].flat.view(o.slot));
    }
  }
  ++layoutVersion_;
  st.rebuiltBuckets = true;
}

std::vector<int64_t> Reducer::allgatherInts(const std::vector<int64_t>& mine) {
  const size_t n = mine.size();
  const size_t size = static_cast<size_t>(group_->size());
  layers::FlatBuffer in(DataType::kInt64, commDevice_, {n}, *ops_);
  layers::FlatBuffer out(DataType::kInt64, commDevice_, {n * size}, *ops_);
  ops_->upload(in.tensor(), mine.data());
  auto work =
      group_->allgatherIntoTensor(out.tensor(), in.tensor(), AllgatherOptions{options_.timeout});
  auto keepIn = in.storage();
  auto keepOut = out.storage();
  work->then([keepIn, keepOut](Work&) {});
  waitWork(*work);  // its errors name the op, sequence number and group
  std::vector<int64_t> all(n * size);
  ops_->download(all.data(), out.tensor());
  return all;
}

std::vector<int64_t> Reducer::broadcastInts(std::vector<int64_t> values) {
  layers::FlatBuffer staged(DataType::kInt64, commDevice_, {values.size()}, *ops_);
  ops_->upload(staged.tensor(), values.data());
  auto work = group_->broadcast(staged.tensor(), BroadcastOptions{0, options_.timeout});
  auto keep = staged.storage();
  work->then([keep](Work&) {});
  waitWork(*work);  // its errors name the op, sequence number and group
  ops_->download(values.data(), staged.tensor());
  return values;
}

}  // namespace ddp
C10D_NAMESPACE_END
}  // namespace c10d
