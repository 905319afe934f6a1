#include "c10d/backends/verbs/process_group_verbs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "c10d/backends/verbs/algorithms/algorithms.h"
#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/backends/verbs/collective_engine.h"
#include "c10d/backends/verbs/comm.h"
#include "c10d/backends/verbs/p2p_engine.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/backends/verbs/transport/transport_setup.h"
#include "c10d/base/abi.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/core/rendezvous_wait.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

ProcessGroupVerbs::ProcessGroupVerbs(std::shared_ptr<Store> store, int rank, int size,
                                     Options options)
    : ProcessGroup(store, rank, size, options),
      cfg_(VerbsConfig::load(options.config)),
      selector_(cfg_),
      name_(detail::str("verbs:", options.groupName)) {
  // Several verbs groups may share one store: every rank numbers its groups the same way.
  const std::string prefix =
      "verbs/" + std::to_string(store->add("verbs/instance/" + std::to_string(rank), 1)) + "/";
  storePrefix_ = prefix;
  peerFps_.resize(static_cast<size_t>(size));
  RankWait how;
  how.group = name_;
  how.rank = rank;
  how.timeout = options.timeout;
  how.progressMs = diagnostics().config().rendezvousProgressMs;
  TransportSetup setup = connectTransport(store, prefix, rank, size, cfg_, how);
  transport_ = std::move(setup.transport);
  shm_ = setup.shm;
  hosts_ = std::move(setup.hosts);
  pids_ = std::move(setup.pids);
  useHosts_ = hosts_.multiHost && cfg_.transport == "auto";
  p2p_ = std::make_unique<P2PEngine>(
      *transport_, rank, size, name(), [this](std::exception_ptr e) { setBroken(e); }, 0,
      cfg_.engineSliceUs);
  engine_ = std::make_unique<CollectiveEngine>(name_, cfg_.inlineBytes, cfg_.inlineUs, size == 1,
                                               cfg_.engineSliceUs);
  revokePoll_ = [this] {
    if (learnRevocation()) C10D_THROW(CommError, name_, ": revoked by a peer");
  };
  touchWorkHeap();
  lastFenceCheck_ = Clock::now();
}

void ProcessGroupVerbs::touchWorkHeap() const {
  // Each op allocates one Work (~400 bytes with its control block; nothing else on the issue
  // path allocates). The first write to a fresh heap page is a page fault, which on a VM costs
  // more than a small op: making and dropping as many Works as a program keeps in flight, on the
  // thread that creates the group (and as a rule issues its ops), faults in the heap they will
  // come from. Freed, they coalesce into the heap's top, below malloc's trim threshold. Nothing
  // per op, unlike a recycling pool's atomics (docs/performance.md).
  constexpr int kWorks = 64;
  std::vector<std::shared_ptr<Work>> works;
  works.reserve(kWorks);
  for (int i = 0; i < kWorks; ++i)
    works.push_back(std::make_shared<Work>(OpType::kUnknown, 0, name_));
}

ProcessGroupVerbs::~ProcessGroupVerbs() {
  shutdown();
}

void ProcessGroupVerbs::shutdown() {
  if (shutdown_) return;  // (abort() stopped the engines already)
  shutdown_ = true;
  shutdownDiagnostics();  // C10D_STRAGGLER_REPORT: needs only the store
  if (engine_) engine_->stop();
  if (p2p_) p2p_->stop();
}

bool ProcessGroupVerbs::peerDead(int r) {
  if (r == rank() || hosts_.hostOf.empty() || hosts_.hostOf[r] != hosts_.hostOf[rank()])
    return false;  // another host: only agree()'s timeout tells
  return !processAlive(pids_[r]);
}

void ProcessGroupVerbs::doRevoke(std::exception_ptr error, bool abort) {
  {
    // The engine thread (a revocation learned from a failed op) and the user's thread (abort()
    // after it) may both get here: the p2p thread is stopped, and joined, once.
    MutexLock lock(revokeMu_);
    if (!revokedFlag_.exchange(true)) {
      // Peers waiting on this rank see it gone at their next poll (shm: the revoked word; tcp:
      // the sockets shut), and the running op here fails at its own.
      transport_->abortAll();
      transport_->wakeSelf(kCollectiveChannel);
      // Not from the p2p thread itself (it never revokes): stop() joins it.
      p2p_->stop(error);
    }
  }
  // Queued collectives fail with the error, the running one at its next poll; the engine thread
  // is joined (outside the lock: it may be waiting for it). abort() comes from the user's thread,
  // never from the engine's.
  if (abort && !shutdown_) {
    shutdown_ = true;
    engine_->stop(error);
  }
}

std::string ProcessGroupVerbs::transportName() const {
  return transport_->name();
}

bool ProcessGroupVerbs::supports(ReduceOp::Kind op, DataType dtype, Device device) const {
  return device.isCPU() && isDefined(op, dtype);
}

namespace {

size_t totalBytes(const std::vector<Tensor>& ts) {
  size_t b = 0;
  for (const auto& t : ts) b += t.nbytes();
  return b;
}

// allgather of `blockBytes` per rank into `blocks` (this rank's block filled already).
void allgatherBlocks(const AlgoSelector& sel, Comm& c, const std::vector<void*>& blocks,
                     size_t blockBytes) {
  const std::vector<size_t> bytes(blocks.size(), blockBytes);
  CollArgs a;
  a.bytes = blockBytes;
  a.outBlocks = &blocks;
  a.outBlockBytes = &bytes;
  sel.run(Collective::kAllgather, c, a);
}

void alltoallBlocks(const AlgoSelector& sel, Comm& c, const std::vector<const void*>& send,
                    const std::vector<size_t>& sendBytes, const std::vector<void*>& recv,
                    const std::vector<size_t>& recvBytes) {
  CollArgs a;
  for (size_t b : sendBytes) a.bytes = std::max(a.bytes, b);
  a.inBlocks = &send;
  a.inBlockBytes = &sendBytes;
  a.outBlocks = &recv;
  a.outBlockBytes = &recvBytes;
  sel.run(Collective::kAlltoall, c, a);
}

}  // namespace

template <typename Fn>
std::shared_ptr<Work> ProcessGroupVerbs::runCollective(OpType op, uint64_t seq,
                                                       Milliseconds timeout, size_t bytes, Fn fn,
                                                       bool shmAlgo) {
  timeout = resolveTimeout(timeout);
  auto work = std::make_shared<BackendWork>(op, seq, name_, timeout);
  linkWork(*work);
  // One clock read per op: the issue time is the deadline's base and an inline op's start time.
  const int64_t issueNs = currentIssueNs();
  const Clock::time_point now{std::chrono::nanoseconds(issueNs)};
  const Clock::time_point deadline = deadlineAfter(now, timeout);
  const OpDesc& desc = currentOp();
  const OpDesc::Wire wire = desc.wire();
  engine_->submit(work, bytes, now,
                  [this, w = work.get(), desc, wire, shmAlgo, deadline, timeout, issueNs,
                   fn = std::move(fn)](Handoff* h) {
                    // The engine holds the Work while its body runs. Inline (h set), the op
                    // starts as it is issued, before any other thread can see the Work.
                    if (h != nullptr) {
                      w->markStartedUnshared(issueNs);
                    } else {
                      w->markStarted();
                    }
                    return execute(desc, wire, !shmAlgo, deadline, timeout, h, fn);
                  });
  return work;
}

bool ProcessGroupVerbs::shmAlgo(Collective c, size_t bytes, size_t count) const {
  return shm_ != nullptr && size() > 1 &&
         selector_.select(c, bytes, count, size(), true) == Algo::kShm;
}

void ProcessGroupVerbs::reportMismatch(const std::string& message) {
  if (mismatchReported_) return;
  mismatchReported_ = true;
  try {
    store()->set(storePrefix_ + "mismatch", message);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d: %s: could not record a collective mismatch in the store: %s\n",
                 name_.c_str(), e.what());
  }
  transport_->abortCollectives();
}

std::string ProcessGroupVerbs::reportedMismatch(Milliseconds wait) {
  try {
    const std::string key = storePrefix_ + "mismatch";
    if (store()->check({key})) return store()->getString(key);
    if (wait > Milliseconds::zero()) {
      store()->wait({key}, wait);
      return store()->getString(key);
    }
  } catch (const std::exception&) {
    // Nothing recorded in time, or the store is gone too: report what this rank saw.
  }
  return "";
}

template <typename Fn>
std::exception_ptr ProcessGroupVerbs::execute(const OpDesc& desc, const OpDesc::Wire& wire,
                                              bool headers, Clock::time_point deadline,
                                              Milliseconds timeout, Handoff* handoff,
                                              const Fn& fn) {
  const OpType op = desc.op;
  const uint64_t seq = desc.seq;
  // The group was revoked (here or by a peer, learned here or from a failed op): every op that
  // had not completed fails with the revocation, whatever it saw first.
  auto revokedFor = [&]() -> std::exception_ptr {
    if (!revoked()) return nullptr;
    return detail::prefixed(revokedError(), detail::str(c10d::toString(op), " #", seq, " in group ",
                                                        name_, " failed: "));
  };
  try {
    if (std::exception_ptr r = revokedFor()) return r;
    // Also inline: an op that caught up (collective_engine.h) started after the ops ahead of it
    // ran, and one of them may have broken the group since beginOp() checked (one atomic load).
    if (std::exception_ptr broken = brokenError()) {
      // An earlier op broke the group while this one was queued: the streams are out of step.
      const std::string prefix = detail::str(c10d::toString(op), " #", seq, " in group ", name_,
                                             " was not run: the group broke before it started: ");
      std::rethrow_exception(detail::prefixed(broken, prefix));
    }
    Comm c(*transport_, kCollectiveChannel, rank(), size(), deadline, op, seq, name_, timeout);
    c.setShm(shm_);
    // The host layout is the same on every rank; so is the decision to use it (a rank alone on
    // its host runs tcp, its peers shm+tcp, and all of them must run the same algorithm). A
    // group forced onto one transport (C10D_TRANSPORT) has one network everywhere.
    if (useHosts_) c.setHosts(&hosts_);
    c.setScratch(scratch_);
    c.setHandoff(handoff);
    c.setAbort(&engine_->aborting());
    c.setRevoked(&revokedFlag_);
    c.setRevokePoll(&revokePoll_);
    c.setOp(&desc, &wire, headers ? &peerFps_ : nullptr);
    if (shm_ != nullptr) shm_->publishOp(wire);
    fn(c);
    c.finishHeaders();
    // Fenced: a rank stopped (mid-op or between ops) may find everything an op needs delivered
    // before the peers revoked; the op they failed must fail here too. Peers can only have given
    // up on this rank (agree() declaring it failed) after it was silent a while, so an op asks
    // the store only when Comm::kRevokePoll passed since the last op that asked: at most one
    // lookup per 100 ms per group (shm also reads the peers' flags, on every op).
    const Clock::time_point done = Clock::now();
    const bool due = done - lastFenceCheck_ > Comm::kRevokePoll;
    if (due) lastFenceCheck_ = done;
    if (revokedFlag_.load(std::memory_order_relaxed) || transport_->peerRevoked() ||
        (due && learnRevocation())) {
      if (!learnRevocation()) C10D_THROW(CommError, c.what(), ": a peer revoked the group");
      return revokedFor();
    }
    // A peer may yet find this multi-tensor op mismatched (this rank's part ended first): kept to
    // name it then (namePartsFromPeers). One reference count; nothing for single-tensor ops.
    if (!desc.parts().empty()) lastParts_ = desc;
    return nullptr;
  } catch (const CollectiveMismatchError& e) {
    if (std::exception_ptr r = revokedFor()) return r;
    // Sizes differing: published before the record, so the peers that fail from this rank giving
    // up find them, publish theirs (namePartsFromPeers) and name the tensor.
    const auto* parts = dynamic_cast<const PartsMismatchError*>(&e);
    if (parts != nullptr) publishParts(desc);
    // A peer at another collective count is usually the trace of an earlier mismatched op that
    // this rank completed (a broadcast root only sends) and a peer is reporting: that report, if
    // it lands soon, names the cause. Otherwise (or a skipped collective) this rank's own view.
    const std::string own = e.what();
    const std::string earlier = reportedMismatch(e.skewed() ? Milliseconds(250) : Milliseconds(0));
    std::exception_ptr err = std::current_exception();
    if (!earlier.empty() && earlier != own) {
      err = std::make_exception_ptr(CollectiveMismatchError(
          detail::str(earlier, "; rank ", rank(), " then saw: ", own), e.skewed()));
    }
    reportMismatch(earlier.empty() ? own : earlier);
    if (parts != nullptr) {
      const std::string named = nameParts(desc, parts->peer, Clock::now() + kPartsWait);
      if (!named.empty()) {
        err = std::make_exception_ptr(
            CollectiveMismatchError(detail::str(named, " (seen by rank ", rank(), ")")));
      }
    }
    setBroken(err);
    return err;
  } catch (const CommError& e) {
    // A peer that revoked the group shut its connections: that, not the hang-up, is the cause
    // (one store lookup, on the error path only; learning it revokes here too, which passes it on).
    if (learnRevocation()) return revokedFor();
    // Transport errors name the peer, not the op: say which op saw it.
    const std::string what = detail::str(c10d::toString(op), " #", seq, " in group ", name_);
    std::exception_ptr err = std::current_exception();
    // A peer that saw a mismatch gave up on its streams: that, not the hang-up, is the cause.
    const std::string reported = reportedMismatch();
    if (!reported.empty()) {
      const std::string named = namePartsFromPeers(desc);
      err = std::make_exception_ptr(CollectiveMismatchError(
          detail::str(named.empty() ? reported : named, "; rank ", rank(),
                      " learned of it from a peer giving up (", e.what(), ")")));
      reportMismatch(reported);  // pass it on to the ranks waiting on this one
    } else if (std::string(e.what()).find(what) == std::string::npos) {
      err = std::make_exception_ptr(CommError(what + ": " + e.what()));
    }
    err = diagnoseFailure(err);
    setBroken(err);
    return err;
  } catch (const TimeoutError&) {
    if (std::exception_ptr r = revokedFor()) return r;
    std::exception_ptr err = diagnoseFailure(std::current_exception());
    setBroken(err);
    return err;
  } catch (...) {
    if (std::exception_ptr r = revokedFor()) return r;
    return std::current_exception();
  }
}

std::shared_ptr<Work> ProcessGroupVerbs::doBroadcast(Tensor t, const BroadcastOptions& opts,
                                                     uint64_t seq) {
  const int root = opts.rootRank;
  return runCollective(
      OpType::kBroadcast, seq, opts.timeout, t.nbytes(),
      [this, t, root](Comm& c) { verbs::broadcast(c, selector_, t.data, t.nbytes(), root); },
      t.nbytes() > 0 && shmAlgo(Collective::kBroadcast, t.nbytes(), t.nbytes()));
}

std::shared_ptr<Work> ProcessGroupVerbs::doAllreduce(Tensor t, const AllreduceOptions& opts,
                                                     uint64_t seq) {
  return doAllreduceInto(t, t, opts, seq);  // in place: input == output
}

std::shared_ptr<Work> ProcessGroupVerbs::doAllreduceInto(Tensor output, Tensor input,
                                                         const AllreduceOptions& opts,
                                                         uint64_t seq) {
  const ReduceOp rop = opts.reduceOp;
  return runCollective(
      OpType::kAllreduce, seq, opts.timeout, input.nbytes(),
      [this, output, input, rop](Comm& c) {
        verbs::allreduce(c, selector_, input.data, output.data, input.numel, input.dtype, rop,
                         cfg_.smallBytes, cfg_.halfAccumF32);
      },
      input.numel > 0 && shmAlgo(Collective::kAllreduce, input.nbytes(), input.numel));
}

std::shared_ptr<Work> ProcessGroupVerbs::doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                              const AllreduceCoalescedOptions& opts,
                                                              uint64_t seq) {
  const ReduceOp rop = opts.reduceOp;
  return runCollective(
      OpType::kAllreduceCoalesced, seq, opts.timeout, totalBytes(tensors),
      [this, tensors, rop](Comm& c) {
        if (tensors.empty()) return;
        const size_t total = totalBytes(tensors);
        // Flatten into a buffer of our own (scratch 0/1 are used by the
        // algorithms), kept between ops: a fresh one of >= 32 MiB would be
        // fresh pages to fault in every time.
        std::vector<uint8_t>& flat = coalesced_;
        if (flat.size() < total) flat.resize(total);
        size_t off = 0;
        for (const auto& t : tensors) {
          if (t.nbytes()) std::memcpy(flat.data() + off, t.data, t.nbytes());
          off += t.nbytes();
        }
        const DataType dt = tensors[0].dtype;
        verbs::allreduce(c, selector_, flat.data(), flat.data(), total / elementSize(dt), dt, rop,
                         cfg_.smallBytes, cfg_.halfAccumF32);
        off = 0;
        for (const auto& t : tensors) {
          if (t.nbytes()) std::memcpy(t.data, flat.data() + off, t.nbytes());
          off += t.nbytes();
        }
      },
      totalBytes(tensors) > 0 && shmAlgo(Collective::kAllreduce, totalBytes(tensors),
                                         totalBytes(tensors) / elementSize(tensors[0].dtype)));
}

std::shared_ptr<Work> ProcessGroupVerbs::doReduce(Tensor t, const ReduceOptions& opts,
                                                  uint64_t seq) {
  return doReduceInto(t, t, opts, seq);  // in place: input == output
}

std::shared_ptr<Work> ProcessGroupVerbs::doReduceInto(Tensor output, Tensor input,
                                                      const ReduceOptions& opts, uint64_t seq) {
  const ReduceOp rop = opts.reduceOp;
  const int root = opts.rootRank;
  return runCollective(
      OpType::kReduce, seq, opts.timeout, input.nbytes(),
      [this, output, input, rop, root](Comm& c) {
        verbs::reduce(c, selector_, input.data, output.data, input.numel, input.dtype, rop, root,
                      cfg_.halfAccumF32);
      },
      input.numel > 0 && shmAlgo(Collective::kReduce, input.nbytes(), input.numel));
}

std::shared_ptr<Work> ProcessGroupVerbs::doAllgather(const std::vector<Tensor>& outputs,
                                                     Tensor input, const AllgatherOptions& opts,
                                                     uint64_t seq) {
  std::vector<void*> blocks(size());
  for (int r = 0; r < size(); ++r) blocks[r] = outputs[r].data;
  return runCollective(OpType::kAllgather, seq, opts.timeout, totalBytes(outputs),
                       [this, blocks, input](Comm& c) {
                         if (input.nbytes() && blocks[rank()] != input.data)
                           std::memcpy(blocks[rank()], input.data, input.nbytes());
                         allgatherBlocks(selector_, c, blocks, input.nbytes());
                       });
}

std::shared_ptr<Work> ProcessGroupVerbs::doAllgatherIntoTensor(Tensor output, Tensor input,
                                                               const AllgatherOptions& opts,
                                                               uint64_t seq) {
  return runCollective(OpType::kAllgatherIntoTensor, seq, opts.timeout, output.nbytes(),
                       [this, output, input](Comm& c) {
                         const size_t b = input.nbytes();
                         std::vector<void*> blocks(size());
                         for (int r = 0; r < size(); ++r)
                           blocks[r] = static_cast<uint8_t*>(output.data) + r * b;
                         if (b && blocks[rank()] != input.data)
                           std::memmove(blocks[rank()], input.data, b);
                         allgatherBlocks(selector_, c, blocks, b);
                       });
}

std::shared_ptr<Work> ProcessGroupVerbs::doGather(const std::vector<Tensor>& outputs, Tensor input,
                                                  const GatherOptions& opts, uint64_t seq) {
  const int root = opts.rootRank;
  std::vector<void*> blocks(size(), nullptr);
  if (rank() == root)
    for (int r = 0; r < size(); ++r) blocks[r] = outputs[r].data;
  return runCollective(OpType::kGather, seq, opts.timeout, input.nbytes() * size(),
                       [this, blocks, input, root](Comm& c) {
                         CollArgs a;
                         a.in = input.data;
                         a.bytes = input.nbytes();
                         a.root = root;
                         a.outBlocks = &blocks;
                         selector_.run(Collective::kGather, c, a);
                       });
}

std::shared_ptr<Work> ProcessGroupVerbs::doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                   const ScatterOptions& opts, uint64_t seq) {
  const int root = opts.rootRank;
  std::vector<const void*> blocks(size(), nullptr);
  if (rank() == root)
    for (int r = 0; r < size(); ++r) blocks[r] = inputs[r].data;
  return runCollective(OpType::kScatter, seq, opts.timeout, output.nbytes() * size(),
                       [this, blocks, output, root](Comm& c) {
                         CollArgs a;
                         a.out = output.data;
                         a.bytes = output.nbytes();
                         a.root = root;
                         a.inBlocks = &blocks;
                         selector_.run(Collective::kScatter, c, a);
                       });
}

void ProcessGroupVerbs::reduceScatterFlat(Comm& c, Tensor output,
                                          const std::vector<const void*>& inputs,
                                          const ReduceOp& op) {
  const size_t cnt = output.numel, b = output.nbytes();
  const int n = size();
  if (cnt == 0) return;
  // The ring reads the inputs in place: a copy of n blocks per op would get fresh pages from glibc
  // each time at >= 32 MiB (mmap), and faulting them in costs far more than the transfer.
  // Only an output overlapping another rank's block (not the in-place chunk) needs a copy first.
  const auto* out = static_cast<const uint8_t*>(output.data);
  std::vector<const void*> blocks = inputs;
  std::vector<uint8_t> copy;
  for (int r = 0; r < n; ++r) {
    const auto* p = static_cast<const uint8_t*>(inputs[r]);
    const bool overlaps = p < out + b && out < p + b;
    if (overlaps && !(r == rank() && p == out)) {
      copy.resize(b * n);
      for (int q = 0; q < n; ++q) {
        std::memcpy(copy.data() + q * b, inputs[q], b);
        blocks[q] = copy.data() + q * b;
      }
      break;
    }
  }
  std::function<void(void*, const void*, size_t)> scaleCopy;
  if (op.kind == ReduceOp::PREMUL_SUM) {
    const DataType dt = output.dtype;
    const double factor = op.scale;
    scaleCopy = [dt, factor](void* dst, const void* src, size_t k) {
      scale(dst, src, k, dt, factor);
    };
  }
  CollArgs a;
  a.out = output.data;
  a.count = cnt;
  a.bytes = b;
  a.dtype = output.dtype;
  a.op = op;
  a.inBlocks = &blocks;
  a.scaleCopy = &scaleCopy;
  a.halfAccumF32 = cfg_.halfAccumF32;
  selector_.run(Collective::kReduceScatter, c, a);  // AVG divides there (algo_table.cc)
}

std::shared_ptr<Work> ProcessGroupVerbs::doReduceScatter(Tensor output,
                                                         const std::vector<Tensor>& inputs,
                                                         const ReduceScatterOptions& opts,
                                                         uint64_t seq) {
  const ReduceOp rop = opts.reduceOp;
  std::vector<const void*> in(size());
  for (int r = 0; r < size(); ++r) in[r] = inputs[r].data;
  return runCollective(OpType::kReduceScatter, seq, opts.timeout, output.nbytes() * size(),
                       [this, output, in, rop](Comm& c) { reduceScatterFlat(c, output, in, rop); });
}

std::shared_ptr<Work> ProcessGroupVerbs::doReduceScatterTensor(Tensor output, Tensor input,
                                                               const ReduceScatterOptions& opts,
                                                               uint64_t seq) {
  const ReduceOp rop = opts.reduceOp;
  std::vector<const void*> in(size());
  for (int r = 0; r < size(); ++r)
    in[r] = static_cast<const uint8_t*>(input.data) + r * output.nbytes();
  return runCollective(OpType::kReduceScatterTensor, seq, opts.timeout, input.nbytes(),
                       [this, output, in, rop](Comm& c) { reduceScatterFlat(c, output, in, rop); });
}

std::shared_ptr<Work> ProcessGroupVerbs::doAlltoall(const std::vector<Tensor>& outputs,
                                                    const std::vector<Tensor>& inputs,
                                                    const AllToAllOptions& opts, uint64_t seq) {
  const int n = size();
  std::vector<const void*> s(n);
  std::vector<void*> r(n);
  std::vector<size_t> sb(n), rb(n);
  for (int q = 0; q < n; ++q) {
    s[q] = inputs[q].data;
    sb[q] = inputs[q].nbytes();
    r[q] = outputs[q].data;
    rb[q] = outputs[q].nbytes();
  }
  return runCollective(
      OpType::kAlltoall, seq, opts.timeout, std::max(totalBytes(inputs), totalBytes(outputs)),
      [this, s, sb, r, rb](Comm& c) { alltoallBlocks(selector_, c, s, sb, r, rb); });
}

std::shared_ptr<Work> ProcessGroupVerbs::doAlltoallSingle(Tensor output, Tensor input,
                                                          const std::vector<size_t>& outputSplits,
                                                          const std::vector<size_t>& inputSplits,
                                                          const AllToAllOptions& opts,
                                                          uint64_t seq) {
  const int n = size();
  const size_t es = elementSize(input.dtype);
  std::vector<const void*> s(n);
  std::vector<void*> r(n);
  std::vector<size_t> sb(n), rb(n);
  size_t so = 0, ro = 0;
  for (int q = 0; q < n; ++q) {
    s[q] = static_cast<const uint8_t*>(input.data) + so * es;
    sb[q] = inputSplits[q] * es;
    so += inputSplits[q];
    r[q] = static_cast<uint8_t*>(output.data) + ro * es;
    rb[q] = outputSplits[q] * es;
    ro += outputSplits[q];
  }
  return runCollective(
      OpType::kAlltoallSingle, seq, opts.timeout, std::max(input.nbytes(), output.nbytes()),
      [this, s, sb, r, rb](Comm& c) { alltoallBlocks(selector_, c, s, sb, r, rb); });
}

std::shared_ptr<Work> ProcessGroupVerbs::doBarrier(const BarrierOptions& opts, uint64_t seq) {
  return runCollective(
      OpType::kBarrier, seq, opts.timeout, 0,
      [this](Comm& c) {
        if (size() == 1) return;
        selector_.run(Collective::kBarrier, c, CollArgs{});
      },
      shmAlgo(Collective::kBarrier, 0, 0));
}

std::shared_ptr<Work> ProcessGroupVerbs::doSend(Tensor t, int dst, const SendRecvOptions& opts,
                                                uint64_t seq) {
  return p2p_->send(t, dst, opts.tag, seq, opts.timeout);
}

std::shared_ptr<Work> ProcessGroupVerbs::doRecv(Tensor t, int src, const SendRecvOptions& opts,
                                                uint64_t seq) {
  return p2p_->recv(t, src, opts.tag, seq, opts.timeout);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
