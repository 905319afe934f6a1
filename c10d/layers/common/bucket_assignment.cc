#include "c10d/layers/common/bucket_assignment.h"

#include <algorithm>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

namespace {

struct Open {
  BucketSpec bucket;
  size_t firstPosition = 0;  // position in `order` of the bucket's first member
  size_t limitIndex = 0;     // which of `limits` applies to this key's open bucket
};

}  // namespace

std::vector<BucketSpec> assignBuckets(const std::vector<TensorSpec>& specs,
                                      const std::vector<size_t>& order,
                                      const std::vector<size_t>& limits) {
  C10D_CHECK_ARG(!limits.empty(), "assignBuckets: no bucket size limits");
  for (size_t limit : limits) C10D_CHECK_ARG(limit > 0, "assignBuckets: a bucket limit of 0 bytes");
  C10D_CHECK_ARG(order.size() == specs.size(), "assignBuckets: order has ", order.size(),
                 " entries for ", specs.size(), " tensors");
  std::vector<bool> seen(specs.size(), false);
  for (size_t idx : order) {
    C10D_CHECK_ARG(idx < specs.size() && !seen[idx],
                   "assignBuckets: order is not a permutation of "
                   "[0, ",
                   specs.size(), "): entry ", idx,
                   idx < specs.size() ? " repeats" : " out of range");
    seen[idx] = true;
  }

  std::vector<std::pair<size_t, BucketSpec>> closed;  // (firstPosition, bucket)
  std::vector<Open> open;                             // one per (dtype, device) seen so far
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const size_t idx = order[pos];
    const TensorSpec& t = specs[idx];
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) {
      return o.bucket.dtype == t.dtype && o.bucket.device == t.device;
    });
    if (it == open.end()) {
      open.push_back(Open{});
      it = open.end() - 1;
      it->bucket.dtype = t.dtype;
      it->bucket.device = t.device;
    }
    if (it->bucket.members.empty()) it->firstPosition = pos;
    it->bucket.members.push_back(idx);
    it->bucket.bytes += t.nbytes();
    if (it->bucket.bytes >= limits[std::min(it->limitIndex, limits.size() - 1)]) {
      closed.emplace_back(it->firstPosition, std::move(it->bucket));
      const BucketSpec& last = closed.back().second;
      it->bucket = BucketSpec{last.dtype, last.device, {}, 0};
      ++it->limitIndex;
    }
  }
  for (Open& o : open) {
    if (!o.bucket.members.empty()) closed.emplace_back(o.firstPosition, std::move(o.bucket));
  }
  std::stable_sort(closed.begin(), closed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<BucketSpec> out;
  out.reserve(closed.size());
  for (auto& c : closed) out.push_back(std::move(c.second));
  return out;
}

std::vector<size_t> reverseOrder(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  return order;
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
