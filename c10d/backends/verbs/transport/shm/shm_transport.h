// ShmTransport: the transport for ranks on one host, over one shared-memory workspace per group.
//
// Setup (collective over the group, through the Store): rank 0 creates a POSIX shm object under
// a random name, sizes it and publishes the name; every rank maps it and counts itself in; the
// last one to map it unlinks it, so nothing is left in /dev/shm even if every rank is SIGKILLed
// afterwards (rank 0 also unlinks it on destruction, in case a rank never arrived).
//
// Workspace layout (offsets in Layout):
//   per rank:   a control block: one doorbell per channel (WaitWord), bumped by whoever changed
//               one of this rank's streams (data in, or space freed)
//   arrivals:   two per rank (by barrier number mod 2): the number of the barrier the rank last
//               arrived at (a WaitWord), its fingerprint's hash and its small slot
//   rings:      one SPSC byte ring per (channel, sender, receiver): the Transport streams
//   staging:    three slots per rank of C10D_SHM_CHUNK bytes, used by the direct collectives
//               (allreduce and reduce: algorithms/allreduce_shm.cc; broadcast: broadcastShm in
//               algorithms/broadcast.cc). Barriers are numbered (step()); the slot of step t is
//               written before barrier t and read by peers only until they reach barrier t+2, so
//               rotating three slots makes one barrier per pipeline step enough.
//
// Single copy (C10D_SHM_CMA): a stream send of at least that many bytes does not go through the
// ring. The sender posts an offer on the ring's control block (its buffer's address and length,
// at the stream position where those bytes belong) and returns; the receiver, once it has read
// the ring up to that position, copies the bytes straight from the sender's memory into its own
// buffer with process_vm_readv (Linux cross-memory attach) and marks the offer done. One copy
// instead of two, and none on the sender's core. The sender's sendsComplete() stays false until
// every offer was read (Comm::run does not return before: the caller's buffer stays untouched),
// and it writes nothing more on that stream meanwhile. An offer to a peer that is gone is dropped
// (as bytes left in its ring would be); one outstanding when this rank's op fails is revoked, and
// a receiver that then reads it fails with CommError instead of keeping what it read. Each
// receiver proves at setup, once every rank mapped the workspace, that it can read each peer —
// the peer publishes the address and value of a probe word before counting itself in — and says
// so on that peer's rings (a probe that could not be made is retried at the first receive); senders
// offer only to receivers that did (ptrace restrictions, seccomp or other pid namespaces make
// the kernel refuse, and the ring is used as before).
//
// Peer death: every local peer's pid is known (exchanged through the Store); waiters check a
// pidfd per peer between sleep slices (every ~10 ms) and throw CommError naming the dead rank.
//
// Threads: none. Channel c of each stream is used by one thread per rank (see transport.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/fd.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace verbs {

// Owns one mapping of the group's workspace (munmap on destruction).
class ShmMapping {
 public:
  ShmMapping() = default;
  ShmMapping(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  uint8_t* base() const { return static_cast<uint8_t*>(base_); }
  size_t bytes() const { return bytes_; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// Whether process `pid` on this host is alive (a zombie is not). Never throws.
bool processAlive(int pid);

class ShmTransport : public Transport, public StagingSlots {
 public:
  // Collective over `store`'s group. `pids[r]` is rank r's process id (all on this host).
  ShmTransport(Store& store, int rank, int size, const std::vector<int>& pids,
               const VerbsConfig& cfg, Milliseconds timeout);
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  size_t trySend(int ch, int peer, const void* buf, size_t n) override;
  size_t tryRecv(int ch, int peer, void* buf, size_t n) override;
  size_t trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                    size_t n) override;
  size_t tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) override;
  uint32_t progressToken(int ch) override;
  void wait(int ch, uint32_t token, const std::vector<Interest>& interests, Milliseconds maxWait,
            SpinWindow spin) override;
  void wakeSelf(int ch) override;
  bool sendsComplete(int ch) override;
  void revokeSends(int ch) override;
  void checkPeers() override;
  bool peerGone(int peer) override;
  // Marks this rank departed (as its destructor does): peers' barriers and waits on it fail.
  void abortCollectives() override;
  void abortAll() override;
  bool peerRevoked() override;

  // When this workspace spans a subset of a larger group (MixedTransport), the group's rank of
  // each local rank, so errors name ranks as the user knows them. Default: the identity.
  void setGroupRanks(std::vector<int> groupRanks) { groupRanks_ = std::move(groupRanks); }

  // ---- the direct collectives' view of the workspace: StagingSlots (transport.h) ----
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Blocks until every rank arrived (spin, then futex); CommError / TimeoutError via `check`.
  // Each rank writes its arrival in lines of its own and polls every peer's: a peer's arrival
  // reaches a waiter in one cache-line transfer, with the small slot beside it (a shared counter
  // costs a transfer per rank, one after another, then the release's). Every rank of this host
  // waits for every other: a rank that left (it shut its group down, or exited) before it arrived
  // makes the barrier throw PeerLeft at once (a barrier it never reached cannot complete). `check`
  // runs before each sleep (Comm::check: deadline, dead peers). With `fp` (the op's fingerprint),
  // each rank arrives with its 64-bit hash, and compares its peers' with its own in the lines it
  // read anyway. When one differs it reads the others' full fingerprints (stored per step in
  // their control blocks) and throws Mismatch naming one that differs from its own.
  // Fingerprints rotate over three sets like the slots. The wait's sched_yield phase ends at
  // `spinUntil` at the latest (then `check` runs: an inline op hands off there instead of holding
  // its caller for C10D_SPIN_US).
  void barrier(const CheckFn& check, const OpDesc::Wire* fp = nullptr,
               Clock::time_point spinUntil = Clock::time_point::max());
  struct PeerLeft {
    std::vector<int> ranks;  // every rank gone by then, in the group's numbering
  };
  struct Mismatch {
    int rank;  // in the group's numbering
    OpDesc::Wire theirs;
  };
  // The op board: each rank publishes the fingerprint of the collective it is running (a 32-byte
  // store under a sequence lock); a waiter reads its peers' to catch a peer stuck in a different
  // op. peerOp returns false while rank r writes, or before its first op.
  void publishOp(const OpDesc::Wire& w);
  bool peerOp(int r, OpDesc::Wire* out) const;
  int spinUs() const { return spinUs_; }
  // The shm object's name (for tests: it must be gone from /dev/shm once setup finishes).
  const std::string& shmName() const { return shmName_; }
  // Single-copy offers posted so far by this rank on channel `ch` (tests, benchmarks).
  uint64_t offersPosted(int ch) const { return offersPosted_[ch]; }
  // Times this rank moved to another CPU because a peer shared its own (tests).
  uint64_t spreads() const { return spreads_; }

 private:
  struct RingCtl;
  struct RankCtl;
  struct Arrival;
  RingCtl& ring(int ch, int from, int to) const;
  uint8_t* ringData(int ch, int from, int to) const;
  RankCtl& rankCtl(int r) const;
  Arrival& arrival(int r, uint64_t step) const;  // rank r's arrival at barrier number `step`
  // Local rank `r` as the group numbers it (what errors name).
  int groupRank(int r) const { return groupRanks_.empty() ? r : groupRanks_[r]; }
  // The barrier proper: stores `fp` (all zero when null) for this step, arrives with its hash,
  // waits; returns whether the ranks' hashes differed.
  bool barrierWait(const CheckFn& check, const OpDesc::Wire* fp, Clock::time_point spinUntil);
  static constexpr int kWireWords = sizeof(OpDesc::Wire) / sizeof(uint64_t);
  // Single copy: tryRecvHdr's part once the ring is drained and `peer` has an offer pending.
  size_t readOffer(int ch, int peer, RingCtl& r, uint64_t seq, void* hdr, size_t hn, void* buf,
                   size_t n);
  // The receiver's probe of `peer` for channel `ch` (see the header comment; each channel's
  // state belongs to that channel's thread); records the result on the peer's ring to us.
  void probeCma(int ch, int peer);
  // Co-located ranks (C10D_SHM_SPREAD, on where the host's ranks fit its CPUs): a barrier waiter
  // that finds a peer whose last arrival was on the CPU it runs on moves itself to a CPU of its
  // affinity mask where no rank of the host last arrived (sched_setaffinity to that CPU, then its
  // own mask back: nothing stays pinned). Waiting does not separate them: yielding only hands the
  // one CPU back and forth, and a scheduler may leave two busy, cache-hot tasks sharing a CPU for
  // many milliseconds. At most every kSpreadEvery per rank.
  void spreadIfSharingCpu();
  static constexpr auto kSpreadEvery = std::chrono::milliseconds(10);

  const int rank_;
  const int size_;
  const size_t ringBytes_;
  const int spinUs_;
  // Resolved C10D_BUSY_US, adapted per wait; one per channel (each channel has its own thread).
  BusyBudget busy_[kNumChannels];
  // The stall (its SpinWindow::since) whose spin a yield that gave the CPU away ended: its later
  // waits sleep at once.
  Clock::time_point yieldedStall_[kNumChannels]{};
  std::string shmName_;
  std::unique_ptr<ShmMapping> map_;
  size_t rankCtlOff_ = 0, arrivalOff_ = 0, ringCtlOff_ = 0, ringDataOff_ = 0, slotOff_ = 0;
  std::vector<int> pids_;
  std::vector<int> groupRanks_;  // empty: local rank == group rank
  std::vector<Fd> pidfds_;       // invalid where pidfd_open failed (then /proc is checked)
  // Single copy. cmaBytes_ == 0: off. cmaProbe_ is the word peers read to prove they can.
  const size_t cmaBytes_;
  uint64_t cmaProbe_ = 0;
  std::vector<int8_t> probed_[kNumChannels];   // per peer: 0 not yet, 1 readable, -1 not
  std::vector<uint64_t> taken_[kNumChannels];  // per peer: bytes read of its pending offer
  std::vector<int> unacked_[kNumChannels];     // peers holding an offer of ours not yet read
  uint64_t offersPosted_[kNumChannels] = {0, 0};
  uint32_t goneCheck_[kNumChannels] = {0, 0};  // sendsComplete calls since a peerGone check
  const bool spread_;                          // C10D_SHM_SPREAD resolved
  Clock::time_point lastSpread_{};             // collective channel's thread only
  uint64_t spreads_ = 0;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
