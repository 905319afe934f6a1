// ProcessGroupC10d: torch's c10d::ProcessGroup (torch 1.13's backend plugin interface) running
// every collective on a c10d engine ("verbs" by default, "gloo" too) through libc10d's C ABI.
//
// Contract
//   Construction is collective: every rank constructs its group over torch's Store (the one
//   init_process_group / new_group hands a backend), which our engine rendezvouses through
//   (torch_store.h). Ops: broadcast, allreduce, allreduce_coalesced, reduce, allgather,
//   _allgather_base, allgather_coalesced, gather, scatter, reduce_scatter, _reduce_scatter_base,
//   alltoall, alltoall_base (uneven splits, in rows of dim 0 as torch counts them), barrier,
//   monitoredBarrier, send, recv, recvAnysource. Each returns a WorkC10d (work.h) at once; the op
//   runs on the engine's threads. Left to torch's defaults: startCoalescing/endCoalescing (no-ops:
//   each op of a _coalescing_manager block runs and completes on its own, as on torch's gloo) and
//   the sequence numbers (set/getSequenceNumberForGroup raise torch's "does not yet support
//   sequence numbers"; torch asks them of gloo and nccl groups only).
//   Tensors: CPU, strided, of a dtype both libraries know (float32/64, float16, bfloat16, int8,
//   uint8, int32, int64, bool). A non-contiguous tensor runs through a contiguous copy
//   (staging.h), an output's result copied back before the Work completes; an output whose
//   elements share memory (expand()) is refused. Reductions: SUM, AVG, PRODUCT, MIN, MAX, BAND,
//   BOR, BXOR, PREMUL_SUM with a scalar factor.
//
// Errors
//   Every bad input raises c10::Error (Python RuntimeError) before anything is communicated, naming
//   the op, this rank and the group, and the problem: "c10d_torch: allgather on rank 1 of
//   c10d:gloo:world (size 2): output_tensors[0][1] has 3 elements, input has 4". Checks libc10d
//   makes (sizes, roots, peers, (op, dtype) support) come back with libc10d's message under the
//   same prefix. Errors found while the op runs (a dead peer, a size that disagrees with a peer's,
//   a timeout) fail the Work: wait() throws, the Future holds the error.
//
// Threads: like every ProcessGroup, one thread issues a group's ops at a time, in the same order on
// every rank. The destructor shuts the engine down (joining its threads) and may block until
// pending ops have failed; it releases the GIL meanwhile if the calling thread holds it (an engine
// thread may need it to drop a tensor's Python object), and must not run on an engine thread
// (from a Future callback).
#ifndef C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_
#define C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "capi.h"
#include "staging.h"

namespace c10d_torch {

class ProcessGroupC10d : public ::c10d::ProcessGroup {
 public:
  // engine: a libc10d backend name ("verbs", "gloo", ...). config: the engine's settings by name
  // (e.g. {"C10D_TRANSPORT", "tcp"}). timeout: every op's default timeout and the rendezvous'.
  ProcessGroupC10d(const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout, const std::string& engine,
                   const std::vector<std::pair<std::string, std::string>>& config);
  ~ProcessGroupC10d() override;

  const std::string getBackendName() const override { return "c10d"; }
  // The engine's registry name ("verbs", "gloo").
  const std::string& engine() const { return engine_; }

  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                          const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplits,
                                                 std::vector<int64_t>& inputSplits,
                                                 const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                            std::vector<at::Tensor>& inputs,
                                            const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) override;
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                        int tag) override;
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                        int tag) override;
  c10::intrusive_ptr<::c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                                 int tag) override;

 private:
  // "c10d_torch: <op> on rank R of <group> (size N)": the prefix of every message about an op.
  std::string context(const char* op) const;
  // Wraps a started op's work (or throws the C ABI's error for a failed start); the work keeps
  // `staging` until the op completes.
  c10::intrusive_ptr<::c10d::Work> finish(const char* op, ::c10d::OpType type, c10d_status_t status,
                                          c10d_work_t* work, std::vector<at::Tensor> outputs,
                                          std::vector<at::Tensor> inputs, Staging staging);

  c10d_pg_t* pg_ = nullptr;
  std::string engine_;
  std::string name_;  // libc10d's "<engine>:<group>"
};

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_
