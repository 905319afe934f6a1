// ProcessGroupGloo: the "gloo" backend, every collective for CPU tensors over Debian's libgloo
// (Gloo 0.5.0) with its TCP transport.
//
// Construction (blocking, collective over the group)
//   Builds a gloo::transport::tcp device bound to the address chosen by GlooConfig (see
//   config.h), then a gloo::rendezvous::Context connected as a full mesh through the group's
//   c10d::Store (store_adapter.h), with the group's timeout. Throws TimeoutError when peers do not
//   show up within it. Every group (world or sub-group) owns its own device and context, so ops of
//   two groups may be in flight at once.
//
// Threads
//   - "c10d-gloo": one worker per group; runs the collectives one at a time in issue order (so
//     every rank runs them in the same order) and completes their Work.
//   - "c10d-gloo-p2p": waiter threads, started on demand (at most `max_p2p_threads`), each waiting
//     for one posted send/recv to complete. The worker only *posts* point-to-point ops (in issue
//     order), so a send never blocks the collectives behind it.
//   - Gloo's own device loop thread (one per group).
//
// Errors
//   Before each collective the ranks allgather the op's fingerprint (OpDesc::Wire: op, dtype,
//   count, root, reduce op, collective count, a hash of a multi-tensor op's per-tensor sizes) and
//   compare all of it; when only the sizes' hash differs, a second allgather (of the sizes) names
//   the tensor. A difference fails the op on every rank with CollectiveMismatchError before any
//   data moved (the group stays usable); it also keeps a count mismatch from reaching Gloo's
//   device thread, where it would terminate the process (an exception escaping a Gloo thread).
//   Gloo exceptions become CommError (a lost connection; names the peer rank when it can be
//   matched, and quotes gloo's message) or TimeoutError (gloo's op timeout, which is set from the
//   op's timeout), prefixed by the op, its sequence number and the group. The first such error
//   marks the group broken (ProcessGroup::setBroken) and fails every queued op with it.
//
// Shutdown (shutdown() or destructor)
//   Stops accepting ops, fails queued ops with Error "shut down", aborts posted p2p waits, lets the
//   running collective finish or time out, and joins every thread it started. Never throws.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/gloo/config.h"
#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/process_group.h"

namespace gloo {
class Context;
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace glooimpl {
class P2pWaiters;
class P2pWork;
}  // namespace glooimpl

class ProcessGroupGloo : public ProcessGroup {
 public:
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, Options options);
  ~ProcessGroupGloo() override;

  std::string backendName() const override { return "gloo"; }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override;
  bool supportsDevice(Device device) const override { return device.isCPU(); }
  void shutdown() override C10D_EXCLUDES(mu_);

  const GlooConfig& config() const { return config_; }
  // "host" the device is bound to (for messages and tests).
  const std::string& boundAddress() const { return boundAddress_; }

  // A unit of work for the worker thread. `run` does the op (throwing on failure) and may return
  // a continuation: then the op is not complete yet, and the continuation (run by a p2p waiter
  // thread) completes it.
  using Continuation = std::function<void()>;
  using TaskFn = std::function<Continuation()>;

 protected:
  std::shared_ptr<ProcessGroup> createSubgroup(std::shared_ptr<Store> store, int rank, int size,
                                               Options options) override {
    return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, std::move(options));
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

 private:
  struct Task {
    std::shared_ptr<BackendWork> work;
    TaskFn run;
  };

  void connect();
  // Creates the op's Work and queues `fn` for the worker; returns the Work.
  std::shared_ptr<Work> enqueue(OpType op, uint64_t seq, Milliseconds timeout, TaskFn fn);
  std::shared_ptr<Work> enqueueWork(std::shared_ptr<BackendWork> work, TaskFn fn)
      C10D_EXCLUDES(mu_);
  // Before each collective (on the worker): an allgather of the ranks' fingerprints; throws
  // CollectiveMismatchError on every rank when they differ (see process_group_gloo.cc).
  void checkAgreement(const OpDesc& desc, Milliseconds timeout);
  static constexpr uint32_t kAgreementTag = 0xC10DC10Du;
  static constexpr uint32_t kPartsTag = kAgreementTag + 1;  // the sizes, when only they differ
  void workerLoop() C10D_EXCLUDES(mu_);
  // Runs a p2p continuation on a waiter thread and completes `work` with its outcome.
  void runContinuation(const std::shared_ptr<BackendWork>& work, Continuation cont);
  // Turns an exception from a running op into the error its Work completes with; breaks the
  // group (and fails queued ops) when the error leaves the transport in an unknown state.
  std::exception_ptr handleFailure(const Work& work, std::exception_ptr error) C10D_EXCLUDES(mu_);
  // "rank N (host:port)" for the peer named in a gloo message, or "" when none matches.
  std::string peerFromMessage(const std::string& msg) const;
  std::shared_ptr<Work> postP2p(Tensor tensor, int peer, bool isSend, const SendRecvOptions& opts,
                                uint64_t seq);
  // Wraps `first` (the error that broke the group) for an op that could not run because of it.
  std::exception_ptr brokenFor(const Work& work, std::exception_ptr first) const;

  // Shared pieces of the collectives (collectives_*.cc).
  void runAllreduce(void* data, size_t numel, DataType dtype, ReduceOp op, uint32_t tag,
                    Milliseconds timeout);

  // Gloo matches collectives by tag, which must agree across ranks. The core's sequence numbers
  // do not (p2p ops count per rank), so collectives take tags from their own counter.
  uint32_t nextCollectiveTag() { return collectiveTag_++; }

  const GlooConfig config_;
  std::atomic<uint32_t> collectiveTag_{0};
  std::string boundAddress_;
  std::shared_ptr<Store> peerStore_;  // this group's rendezvous scope: pair addresses by rank
  std::shared_ptr<::gloo::transport::Device> device_;
  std::shared_ptr<::gloo::Context> context_;

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_ C10D_GUARDED_BY(mu_);
  bool stopping_ C10D_GUARDED_BY(mu_) = false;
  // Posted sends/recvs, so shutdown can abort their waits.
  std::vector<std::weak_ptr<glooimpl::P2pWork>> posted_ C10D_GUARDED_BY(mu_);
  std::thread worker_;
  std::unique_ptr<glooimpl::P2pWaiters> waiters_;
};

C10D_NAMESPACE_END
}  // namespace c10d
