// A fake ProcessGroup backend for the core tests: it communicates with no one, records every do*()
// call it receives (op, sequence number, resolved timeout), and returns a pending or completed
// Work as the test asks. Registered in the registry as "fake" by registerFakeBackend().
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/core/process_group.h"
#include "tests/common/backend_side.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct FakeCall {
  OpType op;
  uint64_t seq;
  Milliseconds timeout;
};

class FakeProcessGroup : public ProcessGroup {
 public:
  using ProcessGroup::ProcessGroup;

  std::string backendName() const override { return "fake"; }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override {
    // Like a CPU backend without bf16 products.
    return device.isCPU() && !(op == ReduceOp::PRODUCT && dtype == DataType::kBFloat16);
  }
  bool supportsDevice(Device device) const override { return device.isCPU(); }

  std::vector<FakeCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // When true, do*() returns pending Works (kept in pending()); else completed ones.
  bool pendingWorks = false;
  std::vector<std::shared_ptr<Work>> pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_;
  }
  std::vector<size_t> lastInputSplits, lastOutputSplits;
  int lastSrcRank = -2;
  int coalescingStarts = 0;

  using ProcessGroup::setBroken;

 protected:
  std::shared_ptr<Work> record(OpType op, uint64_t seq, Milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({op, seq, timeout});
    auto w = std::make_shared<BackendWork>(op, seq, name(), timeout);
    if (pendingWorks) {
      pending_.push_back(w);
    } else {
      w->finish();
    }
    return w;
  }

  std::shared_ptr<Work> doBroadcast(Tensor, const BroadcastOptions& o, uint64_t seq) override {
    return record(OpType::kBroadcast, seq, o.timeout);
  }
  std::shared_ptr<Work> doAllreduce(Tensor, const AllreduceOptions& o, uint64_t seq) override {
    return record(OpType::kAllreduce, seq, o.timeout);
  }
  std::shared_ptr<Work> doAllreduceCoalesced(const std::vector<Tensor>&,
                                             const AllreduceCoalescedOptions& o,
                                             uint64_t seq) override {
    return record(OpType::kAllreduceCoalesced, seq, o.timeout);
  }
  std::shared_ptr<Work> doReduce(Tensor, const ReduceOptions& o, uint64_t seq) override {
    return record(OpType::kReduce, seq, o.timeout);
  }
  std::shared_ptr<Work> doAllgather(const std::vector<Tensor>&, Tensor, const AllgatherOptions& o,
                                    uint64_t seq) override {
    return record(OpType::kAllgather, seq, o.timeout);
  }
  std::shared_ptr<Work> doAllgatherIntoTensor(Tensor, Tensor, const AllgatherOptions& o,
                                              uint64_t seq) override {
    return record(OpType::kAllgatherIntoTensor, seq, o.timeout);
  }
  std::shared_ptr<Work> doGather(const std::vector<Tensor>&, Tensor, const GatherOptions& o,
                                 uint64_t seq) override {
    return record(OpType::kGather, seq, o.timeout);
  }
  std::shared_ptr<Work> doScatter(Tensor, const std::vector<Tensor>&, const ScatterOptions& o,
                                  uint64_t seq) override {
    return record(OpType::kScatter, seq, o.timeout);
  }
  std::shared_ptr<Work> doReduceScatter(Tensor, const std::vector<Tensor>&,
                                        const ReduceScatterOptions& o, uint64_t seq) override {
    return record(OpType::kReduceScatter, seq, o.timeout);
  }
  std::shared_ptr<Work> doReduceScatterTensor(Tensor, Tensor, const ReduceScatterOptions& o,
                                              uint64_t seq) override {
    return record(OpType::kReduceScatterTensor, seq, o.timeout);
  }
  std::shared_ptr<Work> doAlltoall(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const AllToAllOptions& o, uint64_t seq) override {
    return record(OpType::kAlltoall, seq, o.timeout);
  }
  std::shared_ptr<Work> doAlltoallSingle(Tensor, Tensor, const std::vector<size_t>& out,
                                         const std::vector<size_t>& in, const AllToAllOptions& o,
                                         uint64_t seq) override {
    lastOutputSplits = out;
    lastInputSplits = in;
    return record(OpType::kAlltoallSingle, seq, o.timeout);
  }
  std::shared_ptr<Work> doBarrier(const BarrierOptions& o, uint64_t seq) override {
    return record(OpType::kBarrier, seq, o.timeout);
  }
  std::shared_ptr<Work> doSend(Tensor, int, const SendRecvOptions& o, uint64_t seq) override {
    return record(OpType::kSend, seq, o.timeout);
  }
  std::shared_ptr<Work> doRecv(Tensor, int src, const SendRecvOptions& o, uint64_t seq) override {
    lastSrcRank = src;
    return record(src < 0 ? OpType::kRecvAnySource : OpType::kRecv, seq, o.timeout);
  }
  void doStartCoalescing() override { ++coalescingStarts; }

 private:
  mutable std::mutex mu_;
  std::vector<FakeCall> calls_;
  std::vector<std::shared_ptr<Work>> pending_;
};

// Registers "fake" (idempotent).
inline void registerFakeBackend() {
  BackendInfo info;
  info.name = "fake";
  info.description = "in-test fake backend";
  info.priority = -100;
  registerBackend(info, [](std::shared_ptr<Store> store, int rank, int size,
                           const ProcessGroup::Options& options) {
    return std::make_shared<FakeProcessGroup>(std::move(store), rank, size, options);
  });
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
