#include "c10d/core/broadcast_coalesced.h"

#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

struct Bucket {
  std::vector<Tensor> tensors;
  size_t bytes = 0;
};

// Buckets in first-appearance order; each keeps filling until adding a tensor would pass the cap.
std::vector<Bucket> makeBuckets(const std::vector<Tensor>& tensors, size_t bucketBytes) {
  std::vector<Bucket> done;
  std::vector<Bucket> open;  // at most one per (dtype, device)
  for (const Tensor& t : tensors) {
    if (!t.device.isCPU()) {
      done.push_back(Bucket{{t}, t.nbytes()});
      continue;
    }
    Bucket* b = nullptr;
    for (Bucket& o : open) {
      if (o.tensors[0].dtype == t.dtype) b = &o;
    }
    if (b != nullptr && b->bytes + t.nbytes() > bucketBytes) {
      done.push_back(std::move(*b));
      *b = Bucket{};
      b->tensors.push_back(t);
      b->bytes = t.nbytes();
      continue;
    }
    if (b == nullptr) {
      open.push_back(Bucket{});
      b = &open.back();
    }
    b->tensors.push_back(t);
    b->bytes += t.nbytes();
  }
  for (Bucket& o : open) done.push_back(std::move(o));
  return done;
}

}  // namespace

std::shared_ptr<Work> broadcastCoalesced(ProcessGroup& group, const std::vector<Tensor>& tensors,
                                         size_t bucketBytes, int root) {
  C10D_CHECK_ARG(bucketBytes > 0, "broadcastCoalesced: bucketBytes must be > 0 (group ",
                 group.name(), ")");
  C10D_CHECK_ARG(root >= 0 && root < group.size(), "broadcastCoalesced: root ", root,
                 " out of range for group ", group.name(), " of size ", group.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    C10D_CHECK_ARG(tensors[i].data != nullptr || tensors[i].numel == 0,
                   "broadcastCoalesced: tensor ", i, " has null data and ", tensors[i].numel,
                   " elements (group ", group.name(), ")");
  }
  const uint64_t firstSeq = group.sequenceNumber();
  const Milliseconds timeout = group.options().timeout;
  if (tensors.empty()) return makeCompletedWork(OpType::kBroadcast, firstSeq, group.name());

  std::vector<std::shared_ptr<Work>> parts;
  BroadcastOptions opts;
  opts.rootRank = root;
  for (Bucket& bucket : makeBuckets(tensors, bucketBytes)) {
    if (bucket.tensors.size() == 1 || !bucket.tensors[0].device.isCPU()) {
      for (const Tensor& t : bucket.tensors) parts.push_back(group.broadcast(t, opts));
      continue;
    }
    const DataType dtype = bucket.tensors[0].dtype;
    const size_t es = elementSize(dtype);
    // Owned flat buffer (words, so any dtype is aligned); shared by the op and its completion.
    auto flat = std::make_shared<std::vector<uint64_t>>((bucket.bytes + 7) / 8 + 1);
    auto* bytes = reinterpret_cast<uint8_t*>(flat->data());
    const bool isRoot = group.rank() == root;
    if (isRoot) {
      size_t off = 0;
      for (const Tensor& t : bucket.tensors) {
        if (t.nbytes() > 0) std::memcpy(bytes + off, t.data, t.nbytes());
        off += t.nbytes();
      }
    }
    // The bucket's layout travels with the op's description: a rank that ordered or sized its
    // tensors differently fails on every rank instead of unflattening misaligned bytes.
    auto layout = std::make_shared<std::vector<uint64_t>>();
    layout->reserve(bucket.tensors.size());
    for (const Tensor& t : bucket.tensors) layout->push_back(t.numel);
    BroadcastOptions bucketOpts = opts;
    bucketOpts.parts = std::move(layout);
    auto op = group.broadcast(Tensor(flat->data(), bucket.bytes / es, dtype), bucketOpts);
    // A Work of our own completes after the unflatten, so waiting on the result sees the data.
    auto done = std::make_shared<BackendWork>(OpType::kBroadcast, op->sequenceNumber(),
                                              group.name(), op->timeout());
    auto members = std::make_shared<std::vector<Tensor>>(std::move(bucket.tensors));
    op->then([done, flat, members, isRoot](Work& w) {
      std::exception_ptr error = w.exception();
      if (!error && !isRoot) {
        const auto* src = reinterpret_cast<const uint8_t*>(flat->data());
        size_t off = 0;
        for (const Tensor& t : *members) {
          if (t.nbytes() > 0) std::memcpy(t.data, src + off, t.nbytes());
          off += t.nbytes();
        }
      }
      done->finish(error);
    });
    parts.push_back(done);
  }
  return makeCompositeWork(std::move(parts), OpType::kBroadcast, firstSeq, group.name(), timeout);
}

C10D_NAMESPACE_END
}  // namespace c10d
