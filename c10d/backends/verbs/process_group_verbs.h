// ProcessGroupVerbs: c10d's own collective engine ("verbs" in the registry, priority 20, so it is
// the default where it is built).
//
// Setup (the constructor, collective over the group through the Store): every rank publishes its
// host identity (boot_id + hostname) and pid; the transport is chosen for the group: shm when all
// ranks share a host, else ibverbs when a device is present, else tcp; C10D_TRANSPORT forces one
// (settings: config.h; algorithms: algo_select.h).
//
// Threads: two per group. Collectives run in issue order on the group's collective engine
// ("c10d-verbs-coll", collective_engine.h) and return a pending Work at once; a small op issued
// while nothing is queued starts on the caller's thread and completes there if its peers are
// ready, else it is handed to the engine thread after at most C10D_INLINE_US (100 us) of polling,
// so no collective holds the caller while it waits for a peer. User send/recv run on the P2P
// thread ("c10d-verbs-p2p", p2p_engine.h). shutdown() (and the destructor) fails queued ops,
// interrupts the running one and joins both threads.
//
// Errors: a dead peer becomes CommError (shm: pidfd of each local peer checked between sleeps;
// tcp: reset/EOF), an op past its timeout TimeoutError; either completes the op's Work with the
// error and breaks the group (ProcessGroup::setBroken), since the streams are then out of step.
// Mismatched collectives (ranks calling different ops, counts, dtypes, roots, reduce ops, a
// multi-tensor op's per-tensor sizes: their hash is in the fingerprint) are
// caught on every op: fingerprints in the stream headers or the shm barrier (comm.h); the rank
// that notices fails with CollectiveMismatchError, writes the message to the store
// ("verbs/<n>/mismatch") and aborts its collective streams; a peer whose op then fails with
// CommError finds the message and fails with the same CollectiveMismatchError (and aborts in
// turn, so ranks waiting on it hear of it too). The group is broken afterwards.
//
// Fault tolerance (docs/fault-tolerance.md): revoke() and abort() set the group's revoked flag
// (the running op fails at its next poll, queued ops when they come up, send/recv at once) and
// shut this rank's connections on every channel (Transport::abortAll), so each peer's op that
// waits on this rank fails within one poll; a peer whose op fails with CommError looks for the
// revoke record in the store ("verbs/<n>/ft/revoked") and, finding it, fails with the same
// RevokedError and revokes in turn. peerDead: a pidfd check of ranks on this host; ranks on
// other hosts are declared failed by agree()'s timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/backends/verbs/comm.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

class Transport;
class ShmTransport;
class P2PEngine;
class Comm;
class CollectiveEngine;
class Handoff;

class ProcessGroupVerbs : public ProcessGroup {
 public:
  ProcessGroupVerbs(std::shared_ptr<Store> store, int rank, int size, Options options);
  ~ProcessGroupVerbs() override;

  std::string backendName() const override { return "verbs"; }
  std::string describe() const override { return "verbs/" + transportName(); }
  bool supports(ReduceOp::Kind op, DataType dtype, Device device) const override;
  bool supportsDevice(Device device) const override { return device.isCPU(); }
  void shutdown() override;

  // "shm", "tcp" or "ibverbs": the transport this group runs on.
  std::string transportName() const;
  const VerbsConfig& config() const { return cfg_; }

 protected:
  std::string ftKeyPrefix() const override { return storePrefix_ + "ft/"; }
  bool peerDead(int r) override;
  void doRevoke(std::exception_ptr error, bool abort) override;
  std::shared_ptr<ProcessGroup> createSubgroup(std::shared_ptr<Store> store, int rank, int size,
                                               Options options) override {
    return std::make_shared<ProcessGroupVerbs>(std::move(store), rank, size, std::move(options));
  }
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

 private:
  friend void closeConnectionForTesting(ProcessGroup& pg, int peer);  // fault_hooks.h
  friend uint64_t shmSingleCopySendsForTesting(ProcessGroup& pg);     // fault_hooks.h
  friend uint64_t shmCpuMovesForTesting(ProcessGroup& pg);            // fault_hooks.h

  // Submits `fn(comm)` (an op moving about `bytes` bytes) to the engine; returns its Work.
  // `shmAlgo`: the op runs on the shm workspace's barrier (its fingerprint is checked there,
  // not in stream headers).
  template <typename Fn>
  std::shared_ptr<Work> runCollective(OpType op, uint64_t seq, Milliseconds timeout, size_t bytes,
                                      Fn fn, bool shmAlgo = false);
  // Runs one op on whichever thread the engine chose; returns its error (and breaks the group on
  // CommError / TimeoutError / CollectiveMismatchError).
  template <typename Fn>
  std::exception_ptr execute(const OpDesc& desc, const OpDesc::Wire& wire, bool headers,
                             std::chrono::steady_clock::time_point deadline, Milliseconds timeout,
                             Handoff* handoff, const Fn& fn);
  // A mismatch seen here: recorded in the store for the peers that only see this rank give up,
  // then the collective streams are aborted (Transport::abortCollectives).
  void reportMismatch(const std::string& message);
  // The message a peer reported, or "" (looked up when an op fails with CommError or a
  // mismatch); waits up to `wait` for one to be recorded.
  std::string reportedMismatch(Milliseconds wait = Milliseconds(0));
  // A multi-tensor op whose peers split it differently (PartsMismatchError): the fingerprint has
  // only a hash of the sizes, so the ranks failing it swap the sizes through the store (error path
  // only, parts_mismatch.cc). publishParts writes this rank's; nameParts polls the peers' (`first`
  // first) until `until` and names the first that differs from this rank's, or returns "".
  // namePartsFromPeers: a rank failing because a peer gave up; when a peer published sizes for
  // `desc` or for the last multi-tensor op this rank completed, publishes this rank's and names.
  static constexpr Milliseconds kPartsWait{1000};  // failing peers publish within ms
  void publishParts(const OpDesc& desc);
  std::string nameParts(const OpDesc& desc, int first, std::chrono::steady_clock::time_point until);
  std::string namePartsFromPeers(const OpDesc& desc);
  // Whether the op's shm algorithm is the workspace's (barrier-based) one.
  bool shmAlgo(Collective c, size_t bytes, size_t count) const;
  // Setup: touches the heap pages the first ops' Work objects will use (see the .cc).
  void touchWorkHeap() const;
  void reduceScatterFlat(Comm& c, Tensor output, const std::vector<const void*>& inputs,
                         const ReduceOp& op);

  VerbsConfig cfg_;
  AlgoSelector selector_;
  const std::string name_;         // name(), formatted once: it is in every op's Work
  std::string storePrefix_;        // this group's keys in the store: "verbs/<instance>/"
  bool mismatchReported_ = false;  // by this rank (engine thread or inline caller: one at a time)
  std::unique_ptr<Transport> transport_;
  ShmTransport* shm_ = nullptr;  // transport_ when it is the shm one
  HostLayout hosts_;             // which ranks share a host (from the host identities at setup)
  std::vector<int> pids_;        // each rank's pid (from setup; checked on this host only)
  std::atomic<bool> revokedFlag_{false};  // Comm::setRevoked: the running op fails at its poll
  std::function<void()> revokePoll_;      // Comm::setRevokePoll: learnRevocation, throws if so
  Mutex revokeMu_;                        // doRevoke's teardown, once (see there)
  // When an op last looked for a revoke record as it completed (execute; the op's thread).
  std::chrono::steady_clock::time_point lastFenceCheck_;
  bool useHosts_ = false;  // hierarchical algorithms may run (multiHost, transport auto)
  std::unique_ptr<P2PEngine> p2p_;
  std::unique_ptr<CollectiveEngine> engine_;             // stopped (joined) by shutdown()
  std::vector<uint8_t> scratch_[Comm::kScratchBuffers];  // Comm::scratch, one op at a time
  // Per peer: the running op's fingerprint exchange (Comm::setOp; the op's thread only).
  std::vector<Comm::PeerFingerprint> peerFps_;
  std::vector<uint8_t> coalesced_;  // allreduceCoalesced's flat copy (engine thread only)
  OpDesc lastParts_;  // the last multi-tensor op completed (engine thread or inline caller)
  bool shutdown_ = false;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
