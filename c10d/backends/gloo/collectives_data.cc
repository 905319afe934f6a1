// Data-movement collectives of the gloo backend: broadcast, allgather, allgather_into_tensor,
// gather, scatter, alltoall (lists, uneven sizes), alltoall_single (splits) and barrier.
//
// Each maps onto one Gloo 0.5 unbound-buffer algorithm. Tensor lists are staged through one
// contiguous scratch buffer where Gloo wants a flat one (allgather, gather, uneven alltoall via
// gloo::alltoallv). Ops whose element count is the same on every rank are skipped when it is zero
// (every rank skips alike); alltoall never is, since Gloo sends a (possibly empty) message to
// every peer and only some ranks may have nothing to send. Alltoall first allgathers every rank's
// counts, so that splits that disagree across ranks are an error on all ranks, not an overrun.
#include <gloo/allgather.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/scatter.h>

#include <cstring>
#include <string>

#include "c10d/backends/gloo/helpers.h"
#include "c10d/backends/gloo/process_group_gloo.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using glooimpl::dispatchBySize;
using glooimpl::Scratch;

std::shared_ptr<Work> ProcessGroupGloo::doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                                    uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kBroadcast, seq, opts.timeout, [this, tensor, opts, tag]() {
    if (tensor.numel == 0) return Continuation();
    dispatchBySize(tensor.dtype, [&](auto type) {
      using T = decltype(type);
      ::gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<T*>(tensor.data), tensor.numel);
      o.setRoot(opts.rootRank);
      o.setTag(tag);
      o.setTimeout(glooimpl::glooTimeout(opts.timeout));
      ::gloo::broadcast(o);
    });
    return Continuation();
  });
}

namespace {

// gloo::allgather of `input` into the flat `out` (size * input.numel elements).
void allgatherFlat(const std::shared_ptr<::gloo::Context>& ctx, Tensor input, void* out,
                   uint32_t tag, Milliseconds timeout) {
  dispatchBySize(input.dtype, [&](auto type) {
    using T = decltype(type);
    ::gloo::AllgatherOptions o(ctx);
    o.setInput(static_cast<T*>(input.data), input.numel);
    o.setOutput(static_cast<T*>(out), input.numel * ctx->size);
    o.setTag(tag);
    o.setTimeout(glooimpl::glooTimeout(timeout));
    ::gloo::allgather(o);
  });
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::doAllgather(const std::vector<Tensor>& outputs,
                                                    Tensor input, const AllgatherOptions& opts,
                                                    uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAllgather, seq, opts.timeout, [this, outputs, input, opts, tag]() {
    if (input.numel == 0) return Continuation();
    Scratch flat(input.nbytes() * size());
    allgatherFlat(context_, input, flat.data(), tag, opts.timeout);
    glooimpl::unflatten(flat.bytes(), outputs);
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doAllgatherIntoTensor(Tensor output, Tensor input,
                                                              const AllgatherOptions& opts,
                                                              uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAllgatherIntoTensor, seq, opts.timeout,
                 [this, output, input, opts, tag]() {
                   if (input.numel == 0) return Continuation();
                   allgatherFlat(context_, input, output.data, tag, opts.timeout);
                   return Continuation();
                 });
}

std::shared_ptr<Work> ProcessGroupGloo::doGather(const std::vector<Tensor>& outputs, Tensor input,
                                                 const GatherOptions& opts, uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kGather, seq, opts.timeout, [this, outputs, input, opts, tag]() {
    if (input.numel == 0) return Continuation();
    const bool isRoot = rank() == opts.rootRank;
    std::unique_ptr<Scratch> flat;
    if (isRoot) flat = std::make_unique<Scratch>(input.nbytes() * size());
    dispatchBySize(input.dtype, [&](auto type) {
      using T = decltype(type);
      ::gloo::GatherOptions o(context_);
      o.setInput(static_cast<T*>(input.data), input.numel);
      if (isRoot) o.setOutput(static_cast<T*>(flat->data()), input.numel * size());
      o.setRoot(opts.rootRank);
      o.setTag(tag);
      o.setTimeout(glooimpl::glooTimeout(opts.timeout));
      ::gloo::gather(o);
    });
    if (isRoot) glooimpl::unflatten(flat->bytes(), outputs);
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                  const ScatterOptions& opts, uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kScatter, seq, opts.timeout, [this, output, inputs, opts, tag]() {
    if (output.numel == 0) return Continuation();
    dispatchBySize(output.dtype, [&](auto type) {
      using T = decltype(type);
      ::gloo::ScatterOptions o(context_);
      if (rank() == opts.rootRank) {
        std::vector<T*> ptrs;
        for (const Tensor& t : inputs) ptrs.push_back(static_cast<T*>(t.data));
        o.setInputs(ptrs, output.numel);
      }
      o.setOutput(static_cast<T*>(output.data), output.numel);
      o.setRoot(opts.rootRank);
      o.setTag(tag);
      o.setTimeout(glooimpl::glooTimeout(opts.timeout));
      ::gloo::scatter(o);
    });
    return Continuation();
  });
}

namespace {

// Gloo's alltoallv trusts every rank's counts: a peer sending more than this rank expects
// overruns the output, one sending less leaves it waiting or short. So every rank first
// allgathers its (send, expect) counts; all ranks then see the same matrix and, when any pair
// disagrees, all skip the alltoallv (it runs on every rank or none) and raise InvalidArgument
// naming a disagreeing pair (this rank's own first) and both sizes. The group stays usable.
void checkAlltoallCounts(const std::shared_ptr<::gloo::Context>& ctx, OpType op, uint64_t seq,
                         const std::string& group, DataType dtype,
                         const std::vector<int64_t>& outCounts,
                         const std::vector<int64_t>& inCounts, uint32_t tag, Milliseconds timeout) {
  const int n = ctx->size, me = ctx->rank;
  std::vector<int64_t> mine(inCounts);  // [0, n): sends to rank q; [n, 2n): expects from q
  mine.insert(mine.end(), outCounts.begin(), outCounts.end());
  std::vector<int64_t> all(2 * n * static_cast<size_t>(n));
  allgatherFlat(ctx, Tensor(mine.data(), mine.size(), DataType::kInt64, Device::cpu()), all.data(),
                tag, timeout);
  const auto bytes = [&](int64_t count) {
    return count * static_cast<int64_t>(elementSize(dtype));
  };
  std::string first, own;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const int64_t sends = all[a * 2 * n + b], expects = all[b * 2 * n + n + a];
      if (a == b || sends == expects) continue;
      const std::string why =
          detail::str("rank ", a, " sends ", bytes(sends), " bytes to rank ", b, ", but rank ", b,
                      " expects ", bytes(expects), " bytes from rank ", a);
      if (first.empty()) first = why;
      if (own.empty() && (a == me || b == me)) own = why;
    }
  }
  if (first.empty()) return;
  C10D_THROW(InvalidArgument, toString(op), " #", seq, " in group ", group, " on rank ", me,
             ": the ranks' splits disagree: ", own.empty() ? first : own,
             " (no data was exchanged)");
}

// gloo::alltoallv over flat buffers cut into per-rank element counts, after the counts were
// checked across ranks. Null pointers (empty tensors) are replaced by a valid dummy, since Gloo
// copies and sends from them unconditionally.
void alltoallvFlat(const std::shared_ptr<::gloo::Context>& ctx, OpType op, uint64_t seq,
                   const std::string& group, DataType dtype, void* out,
                   const std::vector<int64_t>& outCounts, void* in,
                   const std::vector<int64_t>& inCounts, uint32_t tag, Milliseconds timeout) {
  checkAlltoallCounts(ctx, op, seq, group, dtype, outCounts, inCounts, tag, timeout);
  uint64_t dummyIn = 0;
  uint64_t dummyOut = 0;
  if (in == nullptr) in = &dummyIn;
  if (out == nullptr) out = &dummyOut;
  dispatchBySize(dtype, [&](auto type) {
    using T = decltype(type);
    ::gloo::AlltoallvOptions o(ctx);
    o.setInput(static_cast<T*>(in), inCounts);
    o.setOutput(static_cast<T*>(out), outCounts);
    o.setTag(tag);
    o.setTimeout(glooimpl::glooTimeout(timeout));
    ::gloo::alltoallv(o);
  });
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::doAlltoall(const std::vector<Tensor>& outputs,
                                                   const std::vector<Tensor>& inputs,
                                                   const AllToAllOptions& opts, uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAlltoall, seq, opts.timeout, [this, outputs, inputs, opts, tag, seq]() {
    std::vector<int64_t> inCounts, outCounts;
    for (const Tensor& t : inputs) inCounts.push_back(static_cast<int64_t>(t.numel));
    for (const Tensor& t : outputs) outCounts.push_back(static_cast<int64_t>(t.numel));
    Scratch in(glooimpl::totalBytes(inputs));
    Scratch out(glooimpl::totalBytes(outputs));
    glooimpl::flatten(inputs, in.bytes());
    alltoallvFlat(context_, OpType::kAlltoall, seq, name(), inputs[0].dtype, out.data(), outCounts,
                  in.data(), inCounts, tag, opts.timeout);
    glooimpl::unflatten(out.bytes(), outputs);
    return Continuation();
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doAlltoallSingle(Tensor output, Tensor input,
                                                         const std::vector<size_t>& outputSplits,
                                                         const std::vector<size_t>& inputSplits,
                                                         const AllToAllOptions& opts,
                                                         uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kAlltoallSingle, seq, opts.timeout,
                 [this, output, input, outputSplits, inputSplits, opts, tag, seq]() {
                   std::vector<int64_t> inCounts(inputSplits.begin(), inputSplits.end());
                   std::vector<int64_t> outCounts(outputSplits.begin(), outputSplits.end());
                   alltoallvFlat(context_, OpType::kAlltoallSingle, seq, name(), input.dtype,
                                 output.data, outCounts, input.data, inCounts, tag, opts.timeout);
                   return Continuation();
                 });
}

std::shared_ptr<Work> ProcessGroupGloo::doBarrier(const BarrierOptions& opts, uint64_t seq) {
  const uint32_t tag = nextCollectiveTag();
  return enqueue(OpType::kBarrier, seq, opts.timeout, [this, opts, tag]() {
    ::gloo::BarrierOptions o(context_);
    o.setTag(tag);
    o.setTimeout(glooimpl::glooTimeout(opts.timeout));
    ::gloo::barrier(o);
    return Continuation();
  });
}

C10D_NAMESPACE_END
}  // namespace c10d
