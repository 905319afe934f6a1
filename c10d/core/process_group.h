// ProcessGroup: the abstract collective-communication group every backend implements.
//
// Shape (non-virtual interface)
//   The public collectives are non-virtual. Each one validates its arguments on this rank (null
//   data with a non-zero count, root out of range, sizes, dtype mismatches, an (op, dtype, device)
//   the backend does not support), raising InvalidArgument *before any communication*, assigns the
//   op the group's next sequence number, resolves its timeout (kUnsetTimeout -> the group's), and
//   only then calls the backend's protected do*() method. A backend therefore implements each
//   collective once, on arguments it can trust, and reports what it supports through supports().
//
// Threads and ordering
//   ProcessGroup itself starts no threads. Ops must be issued in the same order on every rank of
//   the group (as in every collective library); a backend completes the returned Work from its own
//   threads. All methods may be called from one thread at a time per group (ops issued from
//   several threads concurrently must be ordered by the caller, as in torch).
//
// Errors
//   The first asynchronous error a backend sees (a dead peer, a timeout) is delivered to every
//   pending Work, and the group is then broken: every later call throws that error's type (e.g.
//   CommError) with a message saying the group is unusable and why.
//
// Diagnostics (group_diagnostics.h, docs/diagnostics.md)
//   Every op is recorded in the group's flight recorder ring (issue / start / end, state, error);
//   stats() sums them per op. The first timeout or communication error a backend reports
//   (diagnoseFailure) adds a desync report to the error (who is behind, who is silent) and dumps
//   the ring (C10D_FLIGHT_RECORDER_DIR) or prints its tail; dumpFlightRecord() writes it on demand.
//   Settings: diagnostics_config.h, from Options::config or the environment.
//
// Sub-groups
//   newGroup(ranks) and split(color, key) are collective over this group (every rank calls them,
//   in the same order with the same arguments for newGroup). Each sub-group gets its own
//   PrefixStore over this group's store and its own backend instance (createSubgroup()); ranks
//   outside it get nullptr. An Options::groupName left as "world" becomes "<parent>/group<id>"
//   (newGroup) or
//   "<parent>/split<id>/color<c>" (split); the id counts this group's newGroup/split calls.
//
// Fault tolerance (docs/fault-tolerance.md)
//   abort() / revoke() / agree() / shrink() let the survivors of a dead (or stopped) rank go on
//   without restarting the job. The store protocol (the revoke record, the agreement, the shrunken
//   group's namespace) lives here, in process_group_ft.cc; a backend opts in by naming a store
//   namespace (ftKeyPrefix), tearing down its ops and connections (doRevoke) and, where it can,
//   telling a dead process from a slow one (peerDead). Backends that do not throw Error naming
//   themselves.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"
#include "c10d/core/diagnostics_config.h"
#include "c10d/core/op_desc.h"
#include "c10d/core/options.h"
#include "c10d/core/reduce_op.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;
class GroupDiagnostics;
struct OpStats;

class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  struct Options {
    // Default timeout of every op of the group (and of its rendezvous).
    Milliseconds timeout = kDefaultTimeout;
    // Name used in messages: "<backend>:<groupName>".
    std::string groupName = "world";
    // Backend-specific settings, by name (each backend documents its table).
    std::map<std::string, std::string> config;
  };

  // Returned by split() to ranks that pass this color: they join no group.
  static constexpr int kNoColor = -1;
  // The largest group size accepted. Backends allocate per-peer state before the rendezvous, so a
  // size beyond any job (a wrong argument) is refused here rather than exhausting memory.
  static constexpr int kMaxSize = 1 << 20;

  // InvalidArgument unless 1 <= size <= kMaxSize, 0 <= rank < size and the timeout is >= 0.
  ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Options options);
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backendName() const = 0;
  // The backend plus what it chose at setup that matters when reading its numbers, e.g.
  // "verbs/shm" or "verbs/tcp" (the transport). Default: backendName().
  virtual std::string describe() const { return backendName(); }
  // "<backend>:<groupName>", used in every message about this group.
  std::string name() const;
  const Options& options() const { return options_; }
  const std::shared_ptr<Store>& store() const { return store_; }

  // Whether the backend can run a reduction `op` on `dtype` tensors on `device`.
  virtual bool supports(ReduceOp::Kind op, DataType dtype, Device device) const = 0;
  // Whether the backend can move tensors on `device` at all.
  virtual bool supportsDevice(Device device) const = 0;

  // ---- collectives ----
  // An output that partly overlaps an input is InvalidArgument: outputs and inputs are the same
  // memory (in place) or disjoint; for allgatherIntoTensor / reduceScatterTensor, in place is the
  // one tensor being this rank's block of the other. (alltoall's tensors are not compared.)
  // In-place: every rank ends with root's `tensor`.
  std::shared_ptr<Work> broadcast(Tensor tensor, const BroadcastOptions& opts = {});
  // In-place: every rank ends with the reduction of all ranks' `tensor`.
  std::shared_ptr<Work> allreduce(Tensor tensor, const AllreduceOptions& opts = {});
  // Out of place: every rank's `output` receives the reduction of all ranks' `input`, and
  // `input` is left as it was (NCCL's ncclAllReduce(send, recv)). Same dtype, device and numel;
  // output and input the same memory is the in-place allreduce, a partial overlap is
  // InvalidArgument. The same collective as allreduce(): ranks may mix the two in one op.
  // Backends that move data through staging buffers fold the copy into that movement (verbs
  // over shared memory; NCCL natively); the default copies input to output first.
  std::shared_ptr<Work> allreduceInto(Tensor output, Tensor input,
                                      const AllreduceOptions& opts = {});
  // allreduce of each tensor (all one dtype and device), in one op.
  std::shared_ptr<Work> allreduceCoalesced(const std::vector<Tensor>& tensors,
                                           const AllreduceCoalescedOptions& opts = {});
  // In-place on root only; other ranks' `tensor` is left as it was.
  std::shared_ptr<Work> reduce(Tensor tensor, const ReduceOptions& opts = {});
  // Out of place: root's `output` receives the reduction of all ranks' `input`; every rank's
  // `input` is left as it was. `output` is used on the root only (other ranks may pass an empty
  // Tensor{}); on the root the same rules as allreduceInto(). The same collective as reduce().
  std::shared_ptr<Work> reduceInto(Tensor output, Tensor input, const ReduceOptions& opts = {});
  // outputs[i] (size() tensors, each input.numel) receives rank i's input.
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, Tensor input,
                                  const AllgatherOptions& opts = {});
  // output (size() * input.numel) receives the inputs concatenated in rank order.
  std::shared_ptr<Work> allgatherIntoTensor(Tensor output, Tensor input,
                                            const AllgatherOptions& opts = {});
  // On root, outputs[i] receives rank i's input; other ranks pass no outputs.
  std::shared_ptr<Work> gather(const std::vector<Tensor>& outputs, Tensor input,
                               const GatherOptions& opts = {});
  // Rank i's output receives root's inputs[i]; other ranks pass no inputs.
  std::shared_ptr<Work> scatter(Tensor output, const std::vector<Tensor>& inputs,
                                const ScatterOptions& opts = {});
  // output = reduction over ranks of their inputs[rank()] (size() inputs, each output.numel).
  std::shared_ptr<Work> reduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                      const ReduceScatterOptions& opts = {});
  // input (size() * output.numel): output = reduction of every rank's rank()-th chunk.
  std::shared_ptr<Work> reduceScatterTensor(Tensor output, Tensor input,
                                            const ReduceScatterOptions& opts = {});
  // outputs[i] receives rank i's inputs[rank()]; tensors may differ in size per peer. This rank's
  // own block must agree with itself (outputs[rank()] vs inputs[rank()]: InvalidArgument at
  // issue); a size that disagrees with the peer's (rank i sends n elements, this rank expects m)
  // fails the Work with InvalidArgument naming both ranks and sizes, on both ranks of the pair
  // (the backends compare sizes before moving data; the group stays usable). Same for the splits
  // of alltoallSingle.
  std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& inputs,
                                 const AllToAllOptions& opts = {});
  // One flat tensor each way, cut by splits (element counts per peer). Empty splits mean equal
  // chunks (numel divisible by size()).
  std::shared_ptr<Work> alltoallSingle(Tensor output, Tensor input,
                                       const std::vector<size_t>& outputSplits,
                                       const std::vector<size_t>& inputSplits,
                                       const AllToAllOptions& opts = {});
  std::shared_ptr<Work> barrier(const BarrierOptions& opts = {});
  std::shared_ptr<Work> send(Tensor tensor, int dstRank, const SendRecvOptions& opts = {});
  std::shared_ptr<Work> recv(Tensor tensor, int srcRank, const SendRecvOptions& opts = {});
  // Receives from whichever rank sends with this tag first; Work::sourceRank() says which.
  std::shared_ptr<Work> recvAnySource(Tensor tensor, const SendRecvOptions& opts = {});

  // Between these two calls, ops are collected; endCoalescing() returns one Work that completes
  // when all of them do (backends may fuse them, e.g. ncclGroupStart/End). Ops issued while
  // coalescing return Works of their own too, but only the returned one may be waited on with
  // meaning for fused backends.
  void startCoalescing();
  std::shared_ptr<Work> endCoalescing();
  bool isCoalescing() const { return coalescing_; }

  // A barrier through the Store that names missing ranks: rank 0 waits for every other rank up to
  // `timeout` and throws TimeoutError listing, by rank number, the ranks that did not arrive
  // (the first one only, unless waitAllRanks), worded as torch's gloo words it ("Rank 2 failed to
  // pass monitoredBarrier in 1000 ms (group ...)"); other ranks wait for rank 0's release and
  // throw TimeoutError if it never comes. Collective over this group.
  void monitoredBarrier(Milliseconds timeout = kUnsetTimeout, bool waitAllRanks = false);

  // ---- sub-groups ----
  std::shared_ptr<ProcessGroup> newGroup(const std::vector<int>& ranks, Options options);
  std::shared_ptr<ProcessGroup> newGroup(const std::vector<int>& ranks);
  std::shared_ptr<ProcessGroup> split(int color, int key, Options options);
  std::shared_ptr<ProcessGroup> split(int color, int key);

  // Stops the backend: pending Works are completed (or failed with an Error saying the group shut
  // down) and the backend's threads are joined. Idempotent; the destructor of a backend calls it.
  virtual void shutdown() {}

  // ---- fault tolerance (see header comment and docs/fault-tolerance.md) ----
  // What agree() decided, the same on every rank that returns from it: the AND of the flags of the
  // ranks it counted alive, and the ranks it declared failed (ascending).
  struct AgreeResult {
    uint64_t flags = ~uint64_t(0);
    std::vector<int> failed;
  };
  // Whether this backend implements abort/revoke/agree/shrink.
  bool supportsFaultTolerance() const { return !ftKeyPrefix().empty(); }
  // Local: this rank's pending and later ops on the group fail at once with CommError "... aborted
  // on rank R: <reason>"; the backend's threads stop and its connections close, so peers waiting on
  // this rank fail promptly with CommError naming it. Idempotent.
  void abort(const std::string& reason = "");
  // Non-collective; any rank, any thread. Records "rank R revoked: <reason>" in the store (the
  // first revoker's record wins) and tears this rank's side of the group down: its pending and
  // later ops fail with RevokedError naming the first revoker and its reason; a peer's op that was
  // waiting on this rank fails within one poll (~10 ms), finds the record and revokes in turn, so
  // the revocation spreads to every live rank the group's ops connect. Idempotent.
  void revoke(const std::string& reason);
  // Whether the group was revoked or aborted (here, or learned from a peer).
  bool revoked() const { return revokedSet_.load(std::memory_order_acquire); }
  // Collective over the live ranks (each calls it, in the same order as its other agree/shrink
  // calls); usable on a revoked or broken group: only the store is used. Every rank posts `flags`;
  // a rank counts as failed when it has not posted and is known dead (peerDead) or `timeout`
  // (kUnsetTimeout: C10D_FT_DETECT_MS, default 10000) has passed. The first rank to see every rank
  // posted or failed writes the decision with compareSet: every caller returns that one decision,
  // even if ranks (the writer included) die during the call. A rank the decision lists as failed
  // (it was stopped, or too slow) throws RevokedError instead: it is fenced out. Ranks declared
  // failed stay failed in later agreements of this group.
  AgreeResult agree(uint64_t flags, Milliseconds timeout = kUnsetTimeout);
  // Collective over the live ranks: revokes this group (if not already), runs agree(), and builds
  // a group of the survivors, ranks renumbered in ascending order, over a fresh store namespace
  // (a rendezvous of the survivors only); usable at once. Its name is "<name>/shrink<k>". A rank
  // declared failed throws RevokedError (fenced).
  std::shared_ptr<ProcessGroup> shrink(Milliseconds timeout = kUnsetTimeout);

  // The error that broke this group, if any (see header comment).
  std::exception_ptr brokenError() const C10D_EXCLUDES(brokenMu_);

  // Number of ops issued so far (the next op's sequence number).
  uint64_t sequenceNumber() const { return seq_.load(); }
  // Number of collectives (ops other than send/recv) issued so far.
  uint64_t collectiveCount() const { return collSeq_; }

  // ---- diagnostics (see header comment) ----
  // Per op: count, failures, bytes, p50/p99/max time from issue to completion (OpStats::table()
  // prints them). Thread-safe; local to this rank.
  OpStats stats() const;
  // Writes this rank's flight record (JSON, read by tools/c10d_trace) to `path`; throws Error
  // naming the path when it cannot. Thread-safe; local to this rank.
  void dumpFlightRecord(const std::string& path) const;
  // Collective: which rank arrived last most often over the collectives in the flight recorders.
  // Rank 0 waits up to `timeout` for the others and returns the summary; others return "".
  // Called by shutdown() when C10D_STRAGGLER_REPORT=1 (rank 0 prints it to stderr).
  std::string stragglerReport(Milliseconds timeout = Milliseconds(10000));
  // The group's recorder, desync report and settings (made on first use; thread-safe).
  GroupDiagnostics& diagnostics() const;

 protected:
  // ---- fault tolerance (process_group_ft.cc) ----
  // This group's namespace in the store for abort/revoke/agree/shrink keys, unique per group
  // instance and equal on every rank; "" (the default): the backend does not support them.
  virtual std::string ftKeyPrefix() const { return ""; }
  // Whether group rank `r`'s process is known to be dead (not merely silent). agree() declares
  // such a rank failed without waiting out its timeout. Called from the agree() caller's thread.
  virtual bool peerDead(int /*r*/) { return false; }
  // Tears this rank's side of the group down after a revoke or abort: pending ops fail with
  // `error` (prompted within one poll), the connections are shut so peers waiting on this rank see
  // it gone. Called once, from any thread (the user's, or the backend's own when it learns of a
  // revocation from a failed op). `abort`: also stop the backend's threads (abort(), never from
  // a backend thread).
  virtual void doRevoke(std::exception_ptr /*error*/, bool /*abort*/) {}
  // A backend whose op failed with CommError calls this: if a revoke record is in the store,
  // learns it (doRevoke, once) and returns the RevokedError; else null. One store lookup.
  std::exception_ptr learnRevocation();
  // The RevokedError (or abort's CommError) once the group is revoked, else null.
  std::exception_ptr revokedError() const C10D_EXCLUDES(brokenMu_);

  // Backends mark the group broken with the first asynchronous error.
  void setBroken(std::exception_ptr error) C10D_EXCLUDES(brokenMu_);
  // Backends pass a timeout / communication error through this before delivering it (and before
  // setBroken): the group's first one runs the desync report (TimeoutError: the returned error
  // names who is behind) and dumps the flight record; later TimeoutErrors get the same report
  // appended, other errors come back as they are. Blocks the calling thread up to
  // C10D_DESYNC_WAIT_MS plus a few store round trips (GroupDiagnostics::onFailure).
  std::exception_ptr diagnoseFailure(std::exception_ptr error);
  // Backends call this at the start of shutdown(): the straggler summary when opted in.
  // Idempotent.
  void shutdownDiagnostics();

  // The description of the op whose do*() method is running (seq, counts, dtype, root, reduce
  // op: op_desc.h), computed by the public wrapper; valid only during that call, on the calling
  // thread (copy what outlives it). The wrapper stores it on the returned Work afterwards.
  const OpDesc& currentOp() const { return *current_; }
  // During do*(): when the op was issued (steady clock, ns; the flight record's issue time), so a
  // backend computes its deadline and an inline start time without reading the clock again.
  int64_t currentIssueNs() const;
  // During do*(): links a Work the backend just made (not yet shared with another thread) to the
  // op's flight record, so its start and end are recorded as they happen without the lock and
  // reference count track() would otherwise take. Optional: track() links Works made without it.
  void linkWork(Work& work);

  // Called after validation with the timeout already resolved; `seq` is the op's sequence number.
  virtual std::shared_ptr<Work> doBroadcast(Tensor tensor, const BroadcastOptions& opts,
                                            uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doAllreduce(Tensor tensor, const AllreduceOptions& opts,
                                            uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                     const AllreduceCoalescedOptions& opts,
                                                     uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doReduce(Tensor tensor, const ReduceOptions& opts,
                                         uint64_t seq) = 0;
  // Out of place (output and input validated, disjoint). The defaults copy input into output on
  // the calling thread (CPU tensors; other devices get InvalidArgument) and run the in-place op;
  // backends that can do better override them. doReduceInto's output is Tensor{} off the root.
  virtual std::shared_ptr<Work> doAllreduceInto(Tensor output, Tensor input,
                                                const AllreduceOptions& opts, uint64_t seq);
  virtual std::shared_ptr<Work> doReduceInto(Tensor output, Tensor input, const ReduceOptions& opts,
                                             uint64_t seq);
  virtual std::shared_ptr<Work> doAllgather(const std::vector<Tensor>& outputs, Tensor input,
                                            const AllgatherOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doAllgatherIntoTensor(Tensor output, Tensor input,
                                                      const AllgatherOptions& opts,
                                                      uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doGather(const std::vector<Tensor>& outputs, Tensor input,
                                         const GatherOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                          const ScatterOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doReduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                const ReduceScatterOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doReduceScatterTensor(Tensor output, Tensor input,
                                                      const ReduceScatterOptions& opts,
                                                      uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doAlltoall(const std::vector<Tensor>& outputs,
                                           const std::vector<Tensor>& inputs,
                                           const AllToAllOptions& opts, uint64_t seq) = 0;
  // Splits are always filled in (equal chunks already expanded).
  virtual std::shared_ptr<Work> doAlltoallSingle(Tensor output, Tensor input,
                                                 const std::vector<size_t>& outputSplits,
                                                 const std::vector<size_t>& inputSplits,
                                                 const AllToAllOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doBarrier(const BarrierOptions& opts, uint64_t seq) = 0;
  virtual std::shared_ptr<Work> doSend(Tensor tensor, int dstRank, const SendRecvOptions& opts,
                                       uint64_t seq) = 0;
  // srcRank == -1: any source.
  virtual std::shared_ptr<Work> doRecv(Tensor tensor, int srcRank, const SendRecvOptions& opts,
                                       uint64_t seq) = 0;

  // Coalescing hooks. The default collects the Works and returns a composite Work.
  virtual void doStartCoalescing() {}
  virtual std::shared_ptr<Work> doEndCoalescing(std::vector<std::shared_ptr<Work>> works,
                                                uint64_t seq);

  // Builds a group of the same backend over `store`. The default calls the factory the registry
  // made this group with (setSubgroupFactory); backends override it to build themselves, or to
  // share resources with the parent (e.g. ncclCommSplit).
  virtual std::shared_ptr<ProcessGroup> createSubgroup(std::shared_ptr<Store> store, int rank,
                                                       int size, Options options);

  // The op's timeout: `t` unless it is kUnsetTimeout, else the group's.
  Milliseconds resolveTimeout(Milliseconds t) const {
    return t == kUnsetTimeout ? options_.timeout : t;
  }
  // A copy of an op's options with its timeout resolved.
  template <typename Opts>
  Opts withResolvedTimeout(const Opts& opts) const {
    Opts o = opts;
    o.timeout = resolveTimeout(opts.timeout);
    return o;
  }

 private:
  // Validation and bookkeeping shared by every public collective: fills d.op, d.seq and
  // d.collSeq, makes `d` the currentOp() and returns the op's seq.
  uint64_t beginOp(OpType op, OpDesc& d);
  // Ends the currentOp(), stores `d` on the work and collects it while coalescing.
  std::shared_ptr<Work> track(std::shared_ptr<Work> work, OpDesc& d);
  // Ends the currentOp() when do*() threw.
  struct CurrentOpScope;
  // beginOp, then `run(seq)` (the backend's do*() call) with the op current, then track().
  template <typename Run>
  std::shared_ptr<Work> issue(OpType op, OpDesc& d, Run&& run);
  // The error the revoke record `record` ("<rank>\n<reason>") names.
  std::exception_ptr revokedErrorFrom(const std::string& record) const;
  // Marks the group revoked with `error` (first call only) and calls doRevoke; false if it was.
  bool markRevoked(std::exception_ptr error, bool abort) C10D_EXCLUDES(brokenMu_);
  // "<op> ... does not support fault tolerance" unless ftKeyPrefix() is set.
  void requireFaultTolerance(const char* op) const;
  std::shared_ptr<ProcessGroup> makeSubgroup(const std::string& tag,
                                             const std::vector<int>& members, Options options);

 public:
  using Factory = std::function<std::shared_ptr<ProcessGroup>(
      std::shared_ptr<Store> store, int rank, int size, const Options& options)>;
  // The factory of this group's backend, for the default createSubgroup(). The registry
  // (c10d/bootstrap/registry.h) sets it on each group it creates, before handing the group out.
  void setSubgroupFactory(Factory factory) { subgroupFactory_ = std::move(factory); }

 private:
  Factory subgroupFactory_;

  const std::shared_ptr<Store> store_;
  const int rank_;
  const int size_;
  const Options options_;
  std::atomic<uint64_t> seq_{0};
  uint64_t collSeq_ = 0;             // collectives issued so far (see collectiveCount())
  const OpDesc* current_ = nullptr;  // see currentOp()
  uint64_t subgroupCounter_ = 0;     // number of newGroup/split calls so far
  uint64_t barrierCounter_ = 0;      // number of monitoredBarrier calls so far

  bool coalescing_ = false;
  uint64_t coalescingSeq_ = 0;
  std::vector<std::shared_ptr<Work>> coalesced_;

  // Diagnostics: this rank's count of groups over store_ (keys their store entries), the
  // GroupDiagnostics made on first use, and the flight record id of the op being issued.
  const DiagnosticsConfig diagConfig_;
  int64_t diagInstance_ = 0;
  mutable std::once_flag diagOnce_;
  mutable std::shared_ptr<GroupDiagnostics> diag_;  // set once under diagOnce_
  std::atomic<bool> diagShutdown_{false};
  uint64_t pendingRecord_ = ~uint64_t(0);  // flight record id from beginOp() until track()
  int64_t pendingIssueNs_ = 0;             // issue time of the op in do*() (0 = not read)
  bool pendingLinked_ = false;             // linkWork() took pendingRecord_
  // diag_.get() once made: the lock-free fast path of diagnostics().
  mutable std::atomic<GroupDiagnostics*> diagPtr_{nullptr};

  mutable Mutex brokenMu_;
  std::exception_ptr broken_ C10D_GUARDED_BY(brokenMu_);
  std::exception_ptr revoked_ C10D_GUARDED_BY(brokenMu_);
  std::atomic<bool> revokedSet_{false};  // revoked_ != nullptr
  uint64_t agreeCount_ = 0;              // agree() calls so far (each one's store namespace)
  std::vector<char> declaredFailed_;     // by earlier agreements (size_ entries once used)
  std::atomic<bool> brokenSet_{false};   // broken_ != nullptr; read without the lock on every op
};

C10D_NAMESPACE_END
}  // namespace c10d
