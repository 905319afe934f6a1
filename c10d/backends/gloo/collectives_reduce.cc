// Reducing collectives of the gloo backend: allreduce, allreduce_coalesced, reduce,
// reduce_scatter, reduce_scatter_tensor.
//
// Gloo 0.5's allreduce and reduce are untyped: they move elements of a given size and call a
// reduction function we provide. We pass one built on the core's reduceInto, so every dtype
// (f16/bf16 as real numbers, bool as logic) and every op (MIN/MAX/PRODUCT, bitwise) reduce
// correctly. AVG is SUM followed by a local divide; PREMUL_SUM is a local scale followed by SUM.
// Gloo 0.5 has no unbound-buffer reduce_scatter, so both reduce_scatter variants run an allreduce
// on a scratch copy and keep this rank's chunk (as torch's ProcessGroupGloo does for uneven
// cases): correct for every op, at about twice the bytes of a true reduce-scatter.
#include <gloo/allreduce.h>
#include <gloo/reduce.h>

#include <cstring>

#include "c10d/backends/gloo/helpers.h"
#include "c10d/backends/gloo/process_group_gloo.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using glooimpl::dispatchBySize;
using glooimpl::Scratch;

void ProcessGroupGloo::runAllreduce(void* data, size_t numel, DataType dtype, ReduceOp op,
                                    uint32_t tag, Milliseconds timeout) {
  if (numel == 0) return;
  glooimpl::preReduce(data, numel, dtype, op);
  dispatchBySize(dtype, [&](auto type) {
    using T = decltype(type);
    ::gloo::AllreduceOptions o(context_);
    o.setOutput(static_cast<T*>(data), numel);
    o.setReduceFunction(glooimpl::makeReduceFunc(dtype, op.kind));
    o.setTag(tag);
    o.setTimeout(glooimpl::glooTimeout(timeout));
    ::gloo::allreduce(o);
  });
  glooimpl::postReduce(data, numel, dtype, op, size());
}

std::shared_ptr<Work> ProcessGroupGloo::doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                                    uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAllreduce, seq, opts.timeout, [this, tensor, opts, tag]() {
    runAllreduce(tensor.data, tensor.numel, tensor.dtype, opts.reduceOp, tag, opts.timeout);
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                             const AllreduceCoalescedOptions& opts,
                                                             uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAllreduceCoalesced, seq, opts.timeout, [this, tensors, opts, tag]() {
    if (tensors.empty()) return Continuation();
    const DataType dtype = tensors[0].dtype;
    const size_t bytes = glooimpl::totalBytes(tensors);
    Scratch flat(bytes);
    glooimpl::flatten(tensors, flat.bytes());
    runAllreduce(flat.data(), bytes / elementSize(dtype), dtype, opts.reduceOp, tag, opts.timeout);
    glooimpl::unflatten(flat.bytes(), tensors);
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doReduce(Tensor tensor, const ReduceOptions& opts,
                                                 uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kReduce, seq, opts.timeout, [this, tensor, opts, tag]() {
    if (tensor.numel == 0) return Continuation();
    const bool isRoot = rank() == opts.rootRank;
    // Gloo's ring reduce writes partial sums into every rank's output; non-roots reduce in a
    // scratch copy so their tensor is left as it was.
    std::unique_ptr<Scratch> scratch;
    void* data = tensor.data;
    if (!isRoot) {
      scratch = std::make_unique<Scratch>(tensor.nbytes());
      std::memcpy(scratch->data(), tensor.data, tensor.nbytes());
      data = scratch->data();
    }
    glooimpl::preReduce(data, tensor.numel, tensor.dtype, opts.reduceOp);
    dispatchBySize(tensor.dtype, [&](auto type) {
      using T = decltype(type);
      ::gloo::ReduceOptions o(context_);
      o.setOutput(static_cast<T*>(data), tensor.numel);
      o.setRoot(opts.rootRank);
      o.setReduceFunction(glooimpl::makeReduceFunc(tensor.dtype, opts.reduceOp.kind));
      o.setTag(tag);
      o.setTimeout(glooimpl::glooTimeout(opts.timeout));
      ::gloo::reduce(o);
    });
    if (isRoot) glooimpl::postReduce(data, tensor.numel, tensor.dtype, opts.reduceOp, size());
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doReduceScatter(Tensor output,
                                                        const std::vector<Tensor>& inputs,
                                                        const ReduceScatterOptions& opts,
                                                        uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kReduceScatter, seq, opts.timeout, [this, output, inputs, opts, tag]() {
    if (output.numel == 0) return Continuation();
    Scratch flat(glooimpl::totalBytes(inputs));
    glooimpl::flatten(inputs, flat.bytes());
    runAllreduce(flat.data(), output.numel * size(), output.dtype, opts.reduceOp, tag,
                 opts.timeout);
    std::memcpy(output.data, flat.bytes() + rank() * output.nbytes(), output.nbytes());
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doReduceScatterTensor(Tensor output, Tensor input,
                                                              const ReduceScatterOptions& opts,
                                                              uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(
      OpType::kReduceScatterTensor, seq, opts.timeout, [this, output, input, opts, tag]() {
        if (output.numel == 0) return Continuation();
        Scratch flat(input.nbytes());
        std::memcpy(flat.data(), input.data, input.nbytes());
        runAllreduce(flat.data(), input.numel, input.dtype, opts.reduceOp, tag, opts.timeout);
        std::memcpy(output.data, flat.bytes() + rank() * output.nbytes(), output.nbytes());
        return Continuation();
      });
}

C10D_NAMESPACE_END
}  // namespace c10d
