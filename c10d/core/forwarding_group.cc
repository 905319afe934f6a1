#include "c10d/core/forwarding_group.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

ProcessGroup::Options optionsOf(const ProcessGroup& inner, const std::string& nameSuffix) {
  ProcessGroup::Options o = inner.options();
  o.groupName = inner.options().groupName + nameSuffix;
  return o;
}

}  // namespace

ForwardingGroup::ForwardingGroup(std::shared_ptr<ProcessGroup> inner, const std::string& nameSuffix)
    : ProcessGroup(inner ? inner->store() : nullptr, inner ? inner->rank() : 0,
                   inner ? inner->size() : 1,
                   inner ? optionsOf(*inner, nameSuffix) : ProcessGroup::Options{}),
      inner_(std::move(inner)) {
  C10D_CHECK_ARG(inner_ != nullptr, "ForwardingGroup: no group to forward to");
}

// Each closure copies the arguments it needs (forward() may keep it): `g` is the inner group.

std::shared_ptr<Work> ForwardingGroup::doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                                   uint64_t) {
  return forward(OpType::kBroadcast,
                 [g = inner_, tensor, opts] { return g->broadcast(tensor, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                                   uint64_t) {
  return forward(OpType::kAllreduce,
                 [g = inner_, tensor, opts] { return g->allreduce(tensor, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                            const AllreduceCoalescedOptions& opts,
                                                            uint64_t) {
  return forward(OpType::kAllreduceCoalesced,
                 [g = inner_, tensors, opts] { return g->allreduceCoalesced(tensors, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doReduce(Tensor tensor, const ReduceOptions& opts,
                                                uint64_t) {
  return forward(OpType::kReduce, [g = inner_, tensor, opts] { return g->reduce(tensor, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doAllgather(const std::vector<Tensor>& outputs, Tensor input,
                                                   const AllgatherOptions& opts, uint64_t) {
  return forward(OpType::kAllgather,
                 [g = inner_, outputs, input, opts] { return g->allgather(outputs, input, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doAllgatherIntoTensor(Tensor output, Tensor input,
                                                             const AllgatherOptions& opts,
                                                             uint64_t) {
  return forward(OpType::kAllgatherIntoTensor, [g = inner_, output, input, opts] {
    return g->allgatherIntoTensor(output, input, opts);
  });
}

std::shared_ptr<Work> ForwardingGroup::doGather(const std::vector<Tensor>& outputs, Tensor input,
                                                const GatherOptions& opts, uint64_t) {
  return forward(OpType::kGather,
                 [g = inner_, outputs, input, opts] { return g->gather(outputs, input, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                 const ScatterOptions& opts, uint64_t) {
  return forward(OpType::kScatter,
                 [g = inner_, output, inputs, opts] { return g->scatter(output, inputs, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doReduceScatter(Tensor output,
                                                       const std::vector<Tensor>& inputs,
                                                       const ReduceScatterOptions& opts, uint64_t) {
  return forward(OpType::kReduceScatter, [g = inner_, output, inputs, opts] {
    return g->reduceScatter(output, inputs, opts);
  });
}

std::shared_ptr<Work> ForwardingGroup::doReduceScatterTensor(Tensor output, Tensor input,
                                                             const ReduceScatterOptions& opts,
                                                             uint64_t) {
  return forward(OpType::kReduceScatterTensor, [g = inner_, output, input, opts] {
    return g->reduceScatterTensor(output, input, opts);
  });
}

std::shared_ptr<Work> ForwardingGroup::doAlltoall(const std::vector<Tensor>& outputs,
                                                  const std::vector<Tensor>& inputs,
                                                  const AllToAllOptions& opts, uint64_t) {
  return forward(OpType::kAlltoall, [g = inner_, outputs, inputs, opts] {
    return g->alltoall(outputs, inputs, opts);
  });
}

std::shared_ptr<Work> ForwardingGroup::doAlltoallSingle(Tensor output, Tensor input,
                                                        const std::vector<size_t>& outputSplits,
                                                        const std::vector<size_t>& inputSplits,
                                                        const AllToAllOptions& opts, uint64_t) {
  return forward(OpType::kAlltoallSingle,
                 [g = inner_, output, input, outputSplits, inputSplits, opts] {
                   return g->alltoallSingle(output, input, outputSplits, inputSplits, opts);
                 });
}

std::shared_ptr<Work> ForwardingGroup::doBarrier(const BarrierOptions& opts, uint64_t) {
  return forward(OpType::kBarrier, [g = inner_, opts] { return g->barrier(opts); });
}

std::shared_ptr<Work> ForwardingGroup::doSend(Tensor tensor, int dstRank,
                                              const SendRecvOptions& opts, uint64_t) {
  return forward(OpType::kSend,
                 [g = inner_, tensor, dstRank, opts] { return g->send(tensor, dstRank, opts); });
}

std::shared_ptr<Work> ForwardingGroup::doRecv(Tensor tensor, int srcRank,
                                              const SendRecvOptions& opts, uint64_t) {
  return forward(
      srcRank == -1 ? OpType::kRecvAnySource : OpType::kRecv, [g = inner_, tensor, srcRank, opts] {
        return srcRank == -1 ? g->recvAnySource(tensor, opts) : g->recv(tensor, srcRank, opts);
      });
}

void ForwardingGroup::doStartCoalescing() {
  inner_->startCoalescing();
}

std::shared_ptr<Work> ForwardingGroup::doEndCoalescing(std::vector<std::shared_ptr<Work>>,
                                                       uint64_t) {
  // The inner group collected the same ops (issued through it while it was coalescing).
  return inner_->endCoalescing();
}

C10D_NAMESPACE_END
}  // namespace c10d
