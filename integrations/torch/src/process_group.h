// ProcessGroupC10d: a torch.distributed backend running every collective on a c10d engine
// ("verbs" by default, "gloo" too) through libc10d's C ABI. On torch 2.x it is a c10d::Backend
// that torch's ProcessGroup dispatches CPU tensors to; on torch 1.13 a c10d::ProcessGroup
// (torch_compat.h).
//
// Contract
//   Construction is collective: every rank constructs its group over torch's Store (the one
//   init_process_group / new_group hands a backend), which our engine rendezvouses through
//   (torch_store.h). Ops: broadcast, allreduce, allreduce_coalesced, reduce, allgather,
//   _allgather_base, allgather_coalesced, gather, scatter, reduce_scatter, _reduce_scatter_base,
//   alltoall, alltoall_base (uneven splits, in rows of dim 0 as torch counts them), barrier,
//   monitoredBarrier, send, recv, recvAnysource; on torch 2.x also allgather_into_tensor_coalesced,
//   reduce_scatter_tensor_coalesced and startCoalescing/endCoalescing (the ops of a coalescing
//   block run as they are issued; endCoalescing's Work completes when all of them have). Each
//   returns a WorkC10d (work.h) at once; the op runs on the engine's threads. Sequence numbers:
//   every collective issued counts one (point-to-point ops do not: ranks issue different ones),
//   from 0 at construction (groups are created collectively, so ranks agree);
//   setSequenceNumberForGroup resets to 0.
//   allreduce of a sparse COO tensor (SUM only, as torch's gloo): each rank's coalesced indices
//   and values are allgathered, summed rank by rank and coalesced, on the calling thread (the
//   returned Work is complete); the result replaces the tensor's contents.
//   Tensors: CPU, strided (sparse COO for allreduce), of a dtype both libraries know (float32/64,
//   float16, bfloat16, int8, uint8, int32, int64, bool). A non-contiguous tensor runs through a
//   contiguous copy
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
//   a timeout) fail the Work: wait() throws, the Future holds the error. A timeout's message
//   reads "<prefix>: Timed out ..." (the words torch's backends and tests use), then our detail.
//
// Threads: like every ProcessGroup, one thread issues a group's ops at a time, in the same order on
// every rank. The destructor shuts the engine down (joining its threads) and may block until
// pending ops have failed; it releases the GIL meanwhile if the calling thread holds it (an engine
// thread may need it to drop a tensor's Python object), and must not run on an engine thread
// (from a Future callback).
#ifndef C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_
#define C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "capi.h"
#include "staging.h"
#include "torch_compat.h"

namespace c10d_torch {

class ProcessGroupC10d : public TorchBackendBase {
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

  void setSequenceNumberForGroup() override { seq_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return seq_; }

#if C10D_TORCH_BACKEND_API
  void startCoalescing() override;
  c10::intrusive_ptr<::c10d::Work> endCoalescing() override;
  c10::intrusive_ptr<::c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ::c10d::ReduceScatterOptions& opts) override;
#endif

 private:
  // "c10d_torch: <op> on rank R of <group> (size N)": the prefix of every message about an op.
  std::string context(const char* op) const;
  // Wraps a started op's work (or throws the C ABI's error for a failed start); the work keeps
  // `staging` until the op completes.
  c10::intrusive_ptr<::c10d::Work> finish(const char* op, ::c10d::OpType type, c10d_status_t status,
                                          c10d_work_t* work, std::vector<at::Tensor> outputs,
                                          std::vector<at::Tensor> inputs, Staging staging);
  // Counts an issued op (sequence number) and adds it to an open coalescing block; returns `w`.
  c10::intrusive_ptr<::c10d::Work> issued(::c10d::OpType type, c10::intrusive_ptr<::c10d::Work> w);
  // allreduce of a sparse COO tensor (see the contract).
  c10::intrusive_ptr<::c10d::Work> allreduceSparse(at::Tensor& tensor,
                                                   const ::c10d::AllreduceOptions& opts);
  // Runs one started op to completion (for the steps of a composite op); throws its error.
  void runStep(const std::string& ctx, c10d_status_t status, c10d_work_t* work);

  c10d_pg_t* pg_ = nullptr;
  uint64_t seq_ = 0;  // ops issued (torch's sequence number)
  // Between startCoalescing and endCoalescing: the Works of the ops issued (torch 2.x).
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<::c10d::Work>> coalesced_;
  std::string engine_;
  std::string name_;  // libc10d's "<engine>:<group>"
};

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_PROCESS_GROUP_H_
