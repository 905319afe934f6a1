// ProcessGroupNccl: the "nccl" backend, every collective for CUDA tensors over libnccl.
//
// Devices and communicators
//   Tensors live on Device{kCUDA, i}; every tensor of one op on one device. The group keeps one
//   NCCL communicator per device it has seen, created on first use (or in the constructor with
//   config "eager_init"=1, on config "device_id" or the current CUDA device). Creation is
//   collective over the group and blocks up to the group timeout: rank 0 calls ncclGetUniqueId
//   and shares the id through the group's Store (unique_id.h); communicators are nonblocking
//   (ncclConfig_t.blocking = 0) so init, split and abort are bounded by the timeout (comm.h).
//   Sub-groups spanning the whole parent (newGroup of every rank, split with one color) are made
//   with ncclCommSplit from the parent's communicator when it exists; other sub-groups create
//   their own through their Store (ranks outside a sub-group never call into the backend, and
//   ncclCommSplit needs every rank of the parent).
//
// Streams and Work
//   Each device has the group's own op stream (high priority with "high_priority_stream"=1). An op
//   first records an event on the caller's current stream (cuda_stream.h) and makes the op stream
//   wait for it, launches the NCCL call(s) inside ncclGroupStart/End, then records a completion
//   event on the op stream; its NcclWork (nccl_work.h) completes when that event fires.
//   startCoalescing()/endCoalescing() keep one ncclGroupStart/End open across the ops (one device
//   only) and return one Work on one event.
//
// Threads
//   "c10d-nccl-wd": one watchdog per group. It polls the pending Works' events (fast while ops
//   complete, backing off to "watchdog_poll_us"), finishes completed Works, and checks
//   ncclCommGetAsyncError. An op past its timeout, an NCCL async error or a CUDA error on an event
//   makes it abort every communicator of the group (ncclCommAbort), fail every pending Work with
//   TimeoutError / CommError / Error naming op, sequence number, group and device, and mark the
//   group broken (later ops throw). The issuing thread and the watchdog share each communicator
//   under its device's mutex.
//
// Shutdown (shutdown() or destructor; idempotent, never throws)
//   Refuses new ops, lets ops in flight finish for up to "shutdown_grace_ms", then aborts what is
//   left (pending Works fail with Error "shut down"), joins the watchdog and aborts/frees the
//   communicators, streams and events.
//
// Construction throws Error "no CUDA device: ..." where CUDA has no device, InvalidArgument for a
// bad config, and whatever eager communicator creation throws.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/nccl/config.h"
#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

struct DeviceState;
class PendingWorks;
class NcclWork;
struct Launch;

// A non-owning reference to an op's body, which launch() calls before it returns: unlike
// std::function it never allocates (the bodies capture tensors and options by value).
class BodyRef {
 public:
  template <typename F>
  BodyRef(const F& f)  // NOLINT(google-explicit-constructor): bodies are passed as lambdas
      : fn_(static_cast<const void*>(&f)),
        call_([](const void* fn, Launch& l) { (*static_cast<const F*>(fn))(l); }) {}
  void operator()(Launch& l) const { call_(fn_, l); }

 private:
  const void* fn_;
  void (*call_)(const void*, Launch&);
};

class ProcessGroupNccl : public ProcessGroup {
 public:
  ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size, Options options);
  ~ProcessGroupNccl() override;

  std::string backendName() const override { return "nccl"; }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override;
  bool supportsDevice(Device device) const override;
  void shutdown() override C10D_EXCLUDES(shutdownMu_);

  const Config& config() const { return config_; }
  // Creates the communicator for `device` now if it does not exist (collective over the group).
  void initCommunicator(Device device);
  bool hasCommunicator(Device device) const;
  // Number of pending (issued, not yet completed) Works.
  size_t pendingWorks() const;

 protected:
  std::shared_ptr<Work> doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                    uint64_t seq) override;
  std::shared_ptr<Work> doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                             const AllreduceCoalescedOptions& opts,
                                             uint64_t seq) override;
  std::shared_ptr<Work> doReduce(Tensor tensor, const ReduceOptions& opts, uint64_t seq) override;
  std::shared_ptr<Work> doAllreduceInto(Tensor output, Tensor input, const AllreduceOptions& opts,
                                        uint64_t seq) override;
  std::shared_ptr<Work> doReduceInto(Tensor output, Tensor input, const ReduceOptions& opts,
                                     uint64_t seq) override;
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
  std::shared_ptr<ProcessGroup> createSubgroup(std::shared_ptr<Store> store, int rank, int size,
                                               Options options) override C10D_EXCLUDES(devicesMu_);

 private:
  // For sub-groups made with ncclCommSplit from a parent's communicator on `device`.
  struct SplitFrom {
    std::shared_ptr<DeviceState> parent;
    int color = 0;
    int key = 0;
  };
  ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size, Options options,
                   const SplitFrom& split);

  using Body = BodyRef;
  // Runs one op on `device`: orders the op stream after the caller's stream, runs `body` (the
  // NCCL calls) inside ncclGroupStart/End, records the completion event and hands the Work to the
  // watchdog. While coalescing, the group stays open and the Work waits for endCoalescing().
  std::shared_ptr<Work> launch(OpType op, uint64_t seq, Milliseconds timeout, int device,
                               std::vector<Tensor> tensors, Body body);
  // Creates it (collective) on first use.
  std::shared_ptr<DeviceState> deviceState(int device) C10D_EXCLUDES(devicesMu_);
  std::shared_ptr<DeviceState> findDeviceState(int device) const C10D_EXCLUDES(devicesMu_);
  int defaultDevice() const;  // last used, else config device_id, else the current device
  std::string describeOp(OpType op, uint64_t seq, int device) const;
  void checkOpen(OpType op) const;
  // C10D_DEBUG=DETAIL: allgathers this op's OpDesc::Wire on the op stream (the caller holds
  // ds.mu) and compares every rank's with ours; throws CollectiveMismatchError naming both sides
  // before any of the op's data moved, or TimeoutError after `timeout`.
  void checkAgreement(DeviceState& ds, const std::string& what, Milliseconds timeout);

  // Watchdog (watchdog.cc).
  void startWatchdog();
  void watchdogLoop() C10D_EXCLUDES(wdMu_);
  void stopWatchdog() C10D_EXCLUDES(wdMu_);
  void notifyWatchdog() C10D_EXCLUDES(wdMu_);
  // Fails every pending Work with an error of `cause`'s type, aborts every communicator and marks
  // the group broken. Idempotent; never throws.
  void abortAll(std::exception_ptr cause, const std::string& why) noexcept
      C10D_EXCLUDES(devicesMu_);
  std::exception_ptr checkAsyncErrors() C10D_EXCLUDES(devicesMu_);

  const Config config_;
  int deviceCount_ = 0;
  std::atomic<int> lastDevice_{-1};
  std::atomic<bool> stopping_{false};
  bool shutDown_ C10D_GUARDED_BY(shutdownMu_) = false;
  Mutex shutdownMu_;

  mutable Mutex devicesMu_;
  std::map<int, std::shared_ptr<DeviceState>> devices_ C10D_GUARDED_BY(devicesMu_);
  uint64_t commCounter_ = 0;  // communicators created so far (issuing thread only)

  std::unique_ptr<PendingWorks> pending_;

  // Coalescing (issuing thread only).
  bool groupOpen_ = false;
  int coalescingDevice_ = -1;
  std::vector<std::function<void()>> coalescedAfter_;
  std::vector<std::shared_ptr<NcclWork>> coalescedWorks_;

  Mutex wdMu_;
  std::condition_variable wdCv_;
  bool wdStop_ C10D_GUARDED_BY(wdMu_) = false;
  std::atomic<bool> wdIdle_{false};
  std::atomic<bool> aborted_{false};
  std::thread watchdog_;
};

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
