// Sub-groups: newGroup(ranks) and split(color, key).
//
// Both are collective over the parent. A per-parent counter, advanced identically on every rank
// because every rank makes the same calls in the same order, gives each sub-group an id; the
// members talk through PrefixStore("group<id>") or PrefixStore("split<id>/color<c>") over the
// parent's store, so sub-groups never see each other's keys.
#include <algorithm>
#include <sstream>
#include <tuple>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/store/prefix_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

std::shared_ptr<ProcessGroup> ProcessGroup::createSubgroup(std::shared_ptr<Store> store, int rank,
                                                           int size, Options options) {
  C10D_CHECK(subgroupFactory_ != nullptr, "backend ", backendName(),
             " cannot make sub-groups: it overrides no createSubgroup() and the group was not made "
             "by the registry (createProcessGroup)");
  auto pg = subgroupFactory_(std::move(store), rank, size, options);
  if (pg != nullptr) pg->setSubgroupFactory(subgroupFactory_);
  return pg;
}

std::shared_ptr<ProcessGroup> ProcessGroup::makeSubgroup(const std::string& tag,
                                                         const std::vector<int>& members,
                                                         Options options) {
  const auto it = std::find(members.begin(), members.end(), rank_);
  C10D_CHECK(it != members.end(), "rank ", rank_, " is not a member of sub-group ", tag);
  const int subRank = static_cast<int>(it - members.begin());
  auto store = std::make_shared<PrefixStore>(tag, store_);
  auto pg = createSubgroup(std::move(store), subRank, static_cast<int>(members.size()),
                           std::move(options));
  C10D_CHECK(pg != nullptr, "backend ", backendName(), " created no sub-group ", tag);
  return pg;
}

std::shared_ptr<ProcessGroup> ProcessGroup::newGroup(const std::vector<int>& ranks,
                                                     Options options) {
  C10D_CHECK_ARG(store_ != nullptr, "newGroup: group ", name(), " has no store");
  C10D_CHECK_ARG(!ranks.empty(), "newGroup: rank ", rank_, " of group ", name(),
                 ": no ranks given");
  std::vector<int> members = ranks;
  std::sort(members.begin(), members.end());
  for (size_t i = 0; i < members.size(); ++i) {
    C10D_CHECK_ARG(members[i] >= 0 && members[i] < size_, "newGroup: rank ", rank_, " of group ",
                   name(), ": rank ", members[i], " is out of range [0, ", size_, ")");
    C10D_CHECK_ARG(i == 0 || members[i] != members[i - 1], "newGroup: rank ", rank_, " of group ",
                   name(), ": rank ", members[i], " is listed twice");
  }
  const uint64_t id = subgroupCounter_++;
  const std::string tag = detail::str("group", id);
  if (options.groupName == "world") options.groupName = options_.groupName + "/" + tag;
  if (!std::binary_search(members.begin(), members.end(), rank_)) return nullptr;
  return makeSubgroup(tag, members, std::move(options));
}

std::shared_ptr<ProcessGroup> ProcessGroup::newGroup(const std::vector<int>& ranks) {
  Options o = options_;
  o.groupName = "world";  // the default: "<parent>/group<id>"
  return newGroup(ranks, std::move(o));
}

std::shared_ptr<ProcessGroup> ProcessGroup::split(int color, int key, Options options) {
  C10D_CHECK_ARG(store_ != nullptr, "split: group ", name(), " has no store");
  C10D_CHECK_ARG(color >= 0 || color == kNoColor, "split: rank ", rank_, " of group ", name(),
                 ": color ", color, " is negative (use kNoColor = ", kNoColor,
                 " to join no group)");
  C10D_CHECK_ARG(options.timeout >= Milliseconds::zero(), "split: rank ", rank_, " of group ",
                 name(), ": timeout ", options.timeout.count(), " ms is negative");
  const uint64_t id = subgroupCounter_++;
  const std::string base = detail::str("split", id);

  // Every rank publishes its (color, key), then reads everyone's.
  store_->set(detail::str(base, "/", rank_), detail::str(color, " ", key));
  std::vector<std::string> keys;
  for (int r = 0; r < size_; ++r) keys.push_back(detail::str(base, "/", r));
  store_->wait(keys, options.timeout);
  const std::vector<Bytes> values = store_->multiGet(keys);
  if (color == kNoColor) return nullptr;

  std::vector<std::tuple<int, int>> same;  // (key, rank) of the ranks with our color
  for (int r = 0; r < size_; ++r) {
    std::istringstream in(toString(values[r]));
    int c = 0;
    int k = 0;
    C10D_CHECK(static_cast<bool>(in >> c >> k), "split: rank ", rank_, " of group ", name(),
               ": malformed entry '", toString(values[r]), "' from rank ", r, " in the store");
    if (c == color) same.emplace_back(k, r);
  }
  std::sort(same.begin(), same.end());
  std::vector<int> members;
  for (const auto& e : same) members.push_back(std::get<1>(e));

  const std::string tag = detail::str(base, "/color", color);
  if (options.groupName == "world") options.groupName = options_.groupName + "/" + tag;
  return makeSubgroup(tag, members, std::move(options));
}

std::shared_ptr<ProcessGroup> ProcessGroup::split(int color, int key) {
  Options o = options_;
  o.groupName = "world";  // the default: "<parent>/split<id>/color<c>"
  return split(color, key, std::move(o));
}

C10D_NAMESPACE_END
}  // namespace c10d
