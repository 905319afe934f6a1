// ForwardingGroup: a ProcessGroup that runs every op on another group (`inner`), each through one
// hook, forward(). The base of decorators that change how ops are issued or observed without
// knowing each op: timing (perf/common/timed_group.h), deferral, fault injection.
//
// forward(op, issue) gets the op's kind and a closure that issues it on the inner group. The
// closure holds copies of the op's arguments (tensor views, options, split vectors), so a
// subclass may call it later or from another thread. The default calls it at once.
//
// This group validates each op (its own sequence numbers), then the inner group validates it again
// and runs it; errors are the inner group's. Sub-groups (newGroup / split) are plain groups of the
// inner backend. Coalescing is the inner group's: startCoalescing() starts it there, the ops
// issued meanwhile go there, and endCoalescing() returns its composite Work.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class ForwardingGroup : public ProcessGroup {
 public:
  // `nameSuffix` is appended to the inner group's name ("/timed": "verbs:world/timed").
  ForwardingGroup(std::shared_ptr<ProcessGroup> inner, const std::string& nameSuffix);

  std::string backendName() const override { return inner_->backendName(); }
  std::string describe() const override { return inner_->describe(); }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override {
    return inner_->supports(op, dtype, device);
  }
  bool supportsDevice(Device device) const override { return inner_->supportsDevice(device); }
  void shutdown() override { inner_->shutdown(); }
  const std::shared_ptr<ProcessGroup>& inner() const { return inner_; }

 protected:
  using Issue = std::function<std::shared_ptr<Work>()>;
  // Every op passes through here (see the header comment).
  virtual std::shared_ptr<Work> forward(OpType op, Issue issue) {
    (void)op;
    return issue();
  }

  std::shared_ptr<Work> doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                             const AllreduceCoalescedOptions& opts,
                                             uint64_t seq) override;
  std::shared_ptr<Work> doReduce(Tensor tensor, const ReduceOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doAllgather(const std::vector<Tensor>& outputs, Tensor input,
                                    const AllgatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doAllgatherIntoTensor(Tensor output, Tensor input,
                                              const AllgatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doGather(const std::vector<Tensor>& outputs, Tensor input,
                                 const GatherOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                  const ScatterOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doReduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                        const ReduceScatterOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doReduceScatterTensor(Tensor output, Tensor input,
                                              const ReduceScatterOptions& opts,
                                              uint64_t seq) override;
  std::shared_ptr<Work> doAlltoall(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs, const AllToAllOptions& opts,
                                   uint64_t seq) override;
  std::shared_ptr<Work> doAlltoallSingle(Tensor output, Tensor input,
                                         const std::vector<size_t>& outputSplits,
                                         const std::vector<size_t>& inputSplits,
                                         const AllToAllOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doBarrier(const BarrierOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doSend(Tensor tensor, int dstRank, const SendRecvOptions& opts,
                               uint64_t seq) override;
  std::shared_ptr<Work> doRecv(Tensor tensor, int srcRank, const SendRecvOptions& opts,
                               uint64_t seq) override;
  void doStartCoalescing() override;
  std::shared_ptr<Work> doEndCoalescing(std::vector<std::shared_ptr<Work>> works,
                                        uint64_t seq) override;

 private:
  const std::shared_ptr<ProcessGroup> inner_;
};

C10D_NAMESPACE_END
}  // namespace c10d
