// Naming a multi-tensor op whose ranks split it differently (OpDesc::parts()). The fingerprint
// carries only a hash of the sizes, so on that error (never on a correct op) the sizes go through
// the store, under "verbs/<n>/parts/<collective #>/<rank>". A rank that notices writes its own
// before it records the mismatch and gives up on its streams. Its peers then fail with CommError;
// each finds the written sizes, writes its own (for the failed op, or for the last multi-tensor
// op it completed: a broadcast root finished before anyone could tell it), and every rank polls
// the others' until one differs from its own: its message names that rank, the first differing
// tensor and both ranks' sizes. Where no differing rank writes within kPartsWait, the rank keeps
// the hash-only message.
#include <chrono>
#include <cstring>
#include <thread>

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/base/abi.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

std::string partsKey(const std::string& prefix, const OpDesc& desc, int rank) {
  return detail::str(prefix, "parts/", desc.collSeq, "/", rank);
}

}  // namespace

void ProcessGroupVerbs::publishParts(const OpDesc& desc) {
  const std::vector<uint64_t>& parts = desc.parts();
  Bytes b(parts.size() * sizeof(uint64_t));
  if (!b.empty()) std::memcpy(b.data(), parts.data(), b.size());
  try {
    store()->set(partsKey(storePrefix_, desc, rank()), b);
  } catch (const std::exception&) {
    // The store is gone too: the message stays the hash-only one.
  }
}

std::string ProcessGroupVerbs::nameParts(const OpDesc& desc, int first, Clock::time_point until) {
  const std::vector<uint64_t>& mine = desc.parts();
  std::vector<int> order;  // `first`, then the others in rank order
  if (first >= 0 && first != rank()) order.push_back(first);
  for (int q = 0; q < size(); ++q) {
    if (q != rank() && q != first) order.push_back(q);
  }
  std::vector<bool> read(order.size(), false);
  size_t left = order.size();
  try {
    while (left > 0) {
      for (size_t i = 0; i < order.size(); ++i) {
        if (read[i]) continue;
        const std::string key = partsKey(storePrefix_, desc, order[i]);
        if (!store()->check({key})) continue;
        read[i] = true;
        --left;
        const Bytes b = store()->get(key);
        std::vector<uint64_t> theirs(b.size() / sizeof(uint64_t));
        if (!theirs.empty()) std::memcpy(theirs.data(), b.data(), b.size());
        if (theirs != mine) return partsMismatchMessage(name_, rank(), desc, order[i], theirs);
      }
      if (left == 0 || Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const std::exception&) {
    // The store failed: the message stays the hash-only one.
  }
  return "";
}

std::string ProcessGroupVerbs::namePartsFromPeers(const OpDesc& desc) {
  const OpDesc* candidates[] = {&desc, &lastParts_};
  for (const OpDesc* d : candidates) {
    if (d->parts().empty()) continue;
    bool published = false;
    try {
      for (int q = 0; q < size() && !published; ++q) {
        published = q != rank() && store()->check({partsKey(storePrefix_, *d, q)});
      }
    } catch (const std::exception&) {
      return "";
    }
    if (!published) continue;
    publishParts(*d);
    return nameParts(*d, -1, Clock::now() + kPartsWait);
  }
  return "";
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
