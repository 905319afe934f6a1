// Comm: blocking point-to-point helpers the collective algorithms are written with.
//
// A Comm drives one channel of a Transport on the calling thread: run() progresses a set of sends
// and receives concurrently (a ring step sends right while it receives from left) until all are
// done, sleeping in the transport between polls. While the op runs inline on the caller's thread
// (a Handoff is set, collective_engine.h), it never sleeps: it polls, and hands itself to the
// engine thread once its inline budget is spent or before any sleep (check()). It enforces the op's
// deadline (TimeoutError naming the op, the pending peers and byte counts) and checks peers'
// liveness between sleeps (CommError naming the dead peer). Ops to the same peer in the same
// direction complete in order.
//
// Mismatch checks (setOp): the op's fingerprint (OpDesc::Wire, 32 bytes) leads this rank's bytes
// on every stream the op writes, in the same transport write as the first message (one syscall on
// tcp), and every stream the op reads starts with the sender's fingerprint, read with the first
// message and compared with ours before run() returns: different ops, counts, dtypes, roots,
// reduce ops or per-tensor sizes (a hash) throw CollectiveMismatchError naming both sides
// (PartsMismatchError when only the sizes differ: the backend then fetches the peer's to name
// them). So a rank completes an op only if every peer it received from issued the same op, and, as
// those peers check theirs before they forward anything, only if every rank its result depends on
// did. The ring neighbours exchange fingerprints in every op (finishHeaders() at its end, when no
// data went that way), so ops that move nothing are checked too. Ops on the shm workspace's barrier
// (allreduce/broadcast/barrier "shm") compare fingerprint hashes in the barrier instead, and a rank
// waiting long compares the peers' published ops (ShmTransport::peerOp), so a stream op facing a
// barrier op is caught too.
//
// Also carries what every algorithm needs: rank, size, a scratch buffer, the shm workspace when
// one spans the group, and the reduction helpers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/core/op_desc.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

// A peer whose op differs from this rank's only in its tensors' sizes (OpDesc::parts()): the
// fingerprint carries a hash of them, so `peer`'s sizes must be fetched to name the tensor
// (ProcessGroupVerbs::nameParts).
class PartsMismatchError : public CollectiveMismatchError {
 public:
  PartsMismatchError(const std::string& msg, int peer) : CollectiveMismatchError(msg), peer(peer) {}
  int peer;
};

class ShmTransport;
class Handoff;

struct P2POp {
  bool send = false;
  int peer = -1;
  uint8_t* buf = nullptr;
  size_t len = 0;
  size_t done = 0;
};

// Where a group's ranks live: ranks with the same host identity share memory (shm), the others
// talk over the network. Made once per group (process_group_verbs.cc); read by the hierarchical
// algorithms.
struct HostLayout {
  std::vector<std::vector<int>> hosts;  // each host's ranks, ascending; hosts ordered by first rank
  std::vector<int> hostOf;              // rank -> index in hosts
  // The group spans several hosts and at least one has several ranks: a hierarchical algorithm
  // (shm inside hosts, the network across) can help.
  bool multiHost = false;
  bool balanced = false;  // several hosts, each with the same number of ranks (> 1)
  static HostLayout fromHostIds(const std::vector<std::string>& hostIdOfRank);
  // Rank r's host's ranks, and r's index among them.
  const std::vector<int>& hostRanks(int r) const { return hosts[static_cast<size_t>(hostOf[r])]; }
  size_t localIndex(int r) const;
  // The ranks with local index i, one per host in host order (where `balanced`: the column that
  // the two-level algorithms run across hosts).
  std::vector<int> column(size_t i) const;
};

class Comm {
 public:
  // `group` must outlive the Comm (it is the group's cached name); messages are built from op,
  // seq and group only when an error needs them (nothing is formatted on the fast path).
  Comm(Transport& t, int ch, int rank, int size, Clock::time_point deadline, OpType op,
       uint64_t seq, const std::string& group, Milliseconds timeout);

  // This rank and the group size; inside a View, the view's.
  int rank() const { return view_ != nullptr ? viewRank_ : rank_; }
  int size() const { return view_ != nullptr ? static_cast<int>(view_->size()) : size_; }

  // Makes the Comm a sub-communicator of `members` (ascending or not; group ranks, this rank
  // among them) while it lives: rank()/size() and every peer passed to run/send/recv are
  // positions in `members`; errors still name group ranks. Not nested. The algorithms run
  // unchanged on a View (hierarchical allreduce: inside a host, then across hosts).
  class View {
   public:
    View(Comm& c, const std::vector<int>& members);
    ~View();
    View(const View&) = delete;
    View& operator=(const View&) = delete;

   private:
    Comm& c_;
  };

  // The group's host layout (outlives the Comm), or null when unknown.
  const HostLayout* hosts() const { return hosts_; }
  void setHosts(const HostLayout* h) { hosts_ = h; }
  Transport& transport() const { return t_; }
  // The staging slots of the group's shm workspace (transport.h), or null when the group (or the
  // View) does not share one: all the shm algorithms see of the transport, with shmBarrier().
  const StagingSlots* slots() const { return slots_; }
  // The group's shm workspace (its barrier, fingerprints and slots), or null.
  void setShm(ShmTransport* s);

  // What one op has exchanged of the fingerprints with one peer (valid while stamp is the op's).
  struct PeerFingerprint {
    uint64_t stamp = 0;
    uint8_t sent = 0, got = 0;  // bytes of ours sent to / of theirs received from the peer
    OpDesc::Wire in;
  };
  // The op's description and fingerprint (both outlive the Comm); `peers`: size() entries kept
  // by the caller across ops (stamped, never cleared); null: no stream fingerprints (an shm
  // barrier op, checked in the barrier). Without setOp nothing is checked.
  void setOp(const OpDesc* desc, const OpDesc::Wire* wire, std::vector<PeerFingerprint>* peers);
  // Sends ours to the right neighbour and reads the left one's if the op's data did not.
  void finishHeaders();

  void run(std::vector<P2POp>& ops);
  void send(int peer, const void* buf, size_t n);
  void recv(int peer, void* buf, size_t n);
  void sendRecv(int to, const void* sbuf, size_t sn, int from, void* rbuf, size_t rn);

  // Called before each sleep of a wait (shm waits): hands an inline op to the engine thread, then
  // throws Error once the engine is stopping, TimeoutError past the deadline and CommError for a
  // dead peer.
  void check();
  void setHandoff(Handoff* h) { handoff_ = h; }
  // The engine's stop flag: a running op fails with Error("shut down") at its next poll.
  void setAbort(const std::atomic<bool>* a) { abort_ = a; }
  // The group's revoked flag (ProcessGroup::revoke): likewise, the op fails at its next poll (the
  // backend replaces the error with the group's RevokedError).
  void setRevoked(const std::atomic<bool>* r) { revoked_ = r; }
  // Called from the peer checks once the op has run kRevokePoll, then every kRevokePoll: the
  // backend looks for a revoke record in the store and throws if there is one. It is how a rank
  // waiting only on a silent peer (stopped, or on another host) learns of a revocation that its
  // transport cannot show it (tcp: a hang-up looks like a clean exit). Null: never.
  static constexpr Milliseconds kRevokePoll{100};
  void setRevokePoll(const std::function<void()>* poll) { revokePoll_ = poll; }
  const CheckFn& checkFn() const { return checkFn_; }
  // The workspace's barrier (needs slots()): a rank that left turned into a CommError naming op
  // and rank, a different op on a peer into CollectiveMismatchError.
  void shmBarrier();

  // Scratch buffer `which` (< kScratchBuffers), at least n bytes (reused across calls of this
  // Comm's owner). Algorithms that call one another use different ones (the reduce-scatter ring
  // 0 and 1, the hierarchical reduce-scatter around it 2).
  static constexpr int kScratchBuffers = 3;
  uint8_t* scratch(size_t n, int which = 0);
  // The owner's kScratchBuffers buffers, kept across ops.
  void setScratch(std::vector<uint8_t>* buffers) {
    for (int i = 0; i < kScratchBuffers; ++i) scratch_[i] = buffers + i;
  }
  // "allreduce #12 in group verbs:world"
  std::string what() const;

 private:
  // run() on group ranks.
  void runGroup(std::vector<P2POp>& ops);
  // t_.checkPeers(), its CommError extended with every peer gone by then: a survivor that failed
  // first and exited may be seen before the rank that died and started it all.
  void checkPeers();
  void checkAbort() const;
  // "; gone by now (died or left the group): rank 2" for the peers the transport knows are gone,
  // else "": a rank timing out on a live peer (which waits on the dead one) still names the dead
  // rank. Only on the timeout path (tcp: one poll() per peer).
  std::string goneNote();
  // `peer`'s fingerprint arrived: compare it with ours.
  void verifyHeader(int peer, const OpDesc::Wire& theirs);
  PeerFingerprint& peerFp(int q) {
    PeerFingerprint& p = (*peerFps_)[q];
    if (p.stamp != stamp_) p = PeerFingerprint{stamp_, 0, 0, {}};
    return p;
  }
  // shm: a peer published an op at our collective count that differs from ours.
  void checkBoard();
  [[noreturn]] void mismatch(int peer, const OpDesc::Wire& theirs) const;

  Transport& t_;
  const int ch_;
  const int rank_;
  const int size_;
  const Clock::time_point deadline_;
  const OpType op_;
  const uint64_t seq_;
  const std::string& group_;
  const Milliseconds timeout_;
  ShmTransport* shm_ = nullptr;
  const StagingSlots* slots_ = nullptr;  // shm_'s
  const HostLayout* hosts_ = nullptr;
  const std::vector<int>* view_ = nullptr;  // inside a View: its members (group ranks)
  int viewRank_ = 0;
  ShmTransport* shmOutsideView_ = nullptr;
  Handoff* handoff_ = nullptr;
  const std::atomic<bool>* abort_ = nullptr;
  const std::atomic<bool>* revoked_ = nullptr;
  const std::function<void()>* revokePoll_ = nullptr;
  Clock::time_point lastRevokePoll_;  // the op's start, then the last poll
  std::vector<uint8_t>* scratch_[kScratchBuffers] = {};
  std::vector<uint8_t> ownScratch_[kScratchBuffers];
  Clock::time_point lastPeerCheck_;
  CheckFn checkFn_;
  const OpDesc* desc_ = nullptr;
  const OpDesc::Wire* wire_ = nullptr;
  std::vector<PeerFingerprint>* peerFps_ = nullptr;  // null: no stream fingerprints
  uint64_t stamp_ = 0;                               // this op's stamp in peerFps_
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
