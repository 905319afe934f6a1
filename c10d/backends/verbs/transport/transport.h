// Transport: the narrow interface every collective algorithm of the verbs backend is written over.
//
// A transport gives each ordered pair of ranks, per channel, a reliable, ordered byte stream.
// Channel 0 carries collectives (driven by the group's collective engine: its thread, or the
// caller's thread for an op started inline, never both at once, handed over under a mutex),
// channel 1 carries user send/recv (driven by the backend's p2p thread): each channel is used by
// one thread at a time per rank, so implementations need no locks on the data path.
//
// Everything here is non-blocking except wait(), which sleeps until the channel may have made
// progress (data arrived, space freed) or `maxWait` passed. Algorithms never call these directly;
// they go through Comm (comm.h), which adds deadlines, ordering and peer-failure checks.
//
// Implementations: shm (same host, shm_transport.h), tcp (tcp_transport.h), ibverbs
// (ib_transport.h). Errors: CommError naming the peer when a peer died or a connection broke.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/op_desc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

constexpr int kCollectiveChannel = 0;
constexpr int kP2PChannel = 1;
constexpr int kNumChannels = 2;

// What a waiter is waiting for on one peer (tcp polls exactly these sockets).
struct Interest {
  int peer = -1;
  bool send = false;
  bool recv = false;
};

// How long a wait() may spin (poll, then sched_yield) before it sleeps. A waiter that finds
// nothing to do calls wait() many times in one stall (each returns within maxWait so it can check
// its deadline and its peers); the stall spins once, for the transport's budget counted from
// `since` (when the waiter last made progress), and never past `until` (an inline op's hand-off
// budget, or an idle thread's short watch). Later waits of the stall sleep at once: spinning on
// every call would keep a long-waiting (or idle) thread runnable most of the time.
// `since` = min(): sleep at once.
struct SpinWindow {
  Clock::time_point since;
  Clock::time_point until = Clock::time_point::max();
  static SpinWindow none() { return {Clock::time_point::min(), Clock::time_point::min()}; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Copies up to `n` bytes of `buf` into the stream towards `peer`; returns how many it took.
  virtual size_t trySend(int ch, int peer, const void* buf, size_t n) = 0;
  // Copies up to `n` available bytes from `peer`'s stream into `buf`; returns how many.
  virtual size_t tryRecv(int ch, int peer, void* buf, size_t n) = 0;
  // trySend of `hdr` followed by `buf` as one write (tcp: one sendmsg; shm: one ring update), so
  // a small header rides with the data it leads instead of costing its own syscall. Returns the
  // bytes taken from both (hdr first). Default: trySend of each while the previous went whole.
  virtual size_t trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                            size_t n) {
    size_t k = hn ? trySend(ch, peer, hdr, hn) : 0;
    return k == hn && n ? k + trySend(ch, peer, buf, n) : k;
  }
  // tryRecv into `hdr` and then `buf` as one read (tcp: one recvmsg; shm: one ring update).
  // Returns the bytes stored into both (hdr first).
  virtual size_t tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) {
    size_t k = hn ? tryRecv(ch, peer, hdr, hn) : 0;
    return k == hn && n ? k + tryRecv(ch, peer, buf, n) : k;
  }

  // A value that changes whenever channel `ch` of this rank may have made progress; read it
  // before polling, pass it to wait() so no event between the poll and the sleep is lost.
  virtual uint32_t progressToken(int ch) = 0;
  // Sleeps until progress may be possible on one of `interests`, the token changed, or `maxWait`
  // passed, spinning first within `spin` where that pays. Returns without throwing; callers
  // re-poll. maxWait == 0: poll and spin only, never sleep (an op running inline on the caller's
  // thread).
  virtual void wait(int ch, uint32_t token, const std::vector<Interest>& interests,
                    Milliseconds maxWait, SpinWindow spin) = 0;
  // Wakes this rank's own waiter on `ch` (used to hand the p2p thread new work).
  virtual void wakeSelf(int ch) = 0;
  // False while this rank's sends on `ch` may still read from callers' buffers (zero-copy
  // transports); Comm::run does not return before it is true. The default copies, so: true.
  virtual bool sendsComplete(int /*ch*/) { return true; }
  // The op that sent on `ch` failed: its buffers may be reused at once, so sends that still read
  // from them are withdrawn (a receiver that had not finished reading gets an error, never
  // bytes that changed under it). Comm::run calls it when it throws. Never throws.
  virtual void revokeSends(int /*ch*/) {}
  // Whether `peer` is known to be gone (process exited, connection closed). Data it sent before
  // may still be readable. Never throws.
  virtual bool peerGone(int /*peer*/) { return false; }
  // For a peer that is gone: whether everything it sent on `ch` has arrived, so a receiver that
  // drained `ch` and still misses bytes will never get them. A transport whose streams outlive
  // the process (shm's rings, RDMA-written memory) says true; tcp says so once this channel's own
  // socket got the peer's FIN or reset (its other channels may close first, while the kernel
  // still delivers a large send on this one). Never throws.
  virtual bool streamEnded(int /*ch*/, int /*peer*/) { return true; }
  // Throws CommError naming the first peer known to be dead or disconnected.
  virtual void checkPeers() = 0;
  // This rank gives up on the collective channel (its streams are out of step after a mismatched
  // collective): every peer sees it as gone (peerGone) from now on, so an op waiting on it fails
  // at its next check instead of at its timeout. Never throws. shm: a departed flag; tcp: the
  // sockets shut down; ibverbs: a sentinel RDMA-written into each peer's credit word.
  virtual void abortCollectives() {}
  // The group was revoked or aborted (docs/fault-tolerance.md): as abortCollectives(), on every
  // channel, so a peer's user send/recv waiting on this rank fails too. Any thread; never throws.
  virtual void abortAll() { abortCollectives(); }
  // Whether a peer is known to have revoked (abortAll) without this rank polling anything: shm
  // reads the peers' flags. Checked when an op completes, so a rank stopped mid-op that finds all
  // its data already delivered still fails it. Default (tcp, ibverbs): false. Never throws.
  virtual bool peerRevoked() { return false; }
};

// The one capability beyond byte streams that algorithms may use, offered by the shm transport
// (ShmTransport) when a workspace spans the group, and reached through Comm::slots() (null
// without one): each rank's staging slots in memory every rank maps, numbered by the group's
// barrier steps (Comm::shmBarrier()). The slot of step t is written before barrier t and read by
// peers until they reach barrier t+2, so three rotating slots per rank make one barrier per
// pipeline step enough. Plain data: the shm fast paths pay no virtual call.
//
// Each rank also has a small slot per barrier (kSmallSlotBytes, two rotating) in the cache lines
// that carry its arrival at that barrier: a peer that sees the arrival has the bytes with it, one
// line moved between cores where slot() costs a second. Written before barrier `step`, read by
// peers only between that barrier and the next.
class StagingSlots {
 public:
  static constexpr size_t kSmallSlotBytes = 304;
  size_t slotBytes() const { return slotBytes_; }
  // Rank r's staging slot for barrier number `step` (one of three, rotating).
  uint8_t* slot(int r, uint64_t step) const {
    return slots_ + (static_cast<size_t>(r) * 3 + step % 3) * slotBytes_;
  }
  // Rank r's small slot for barrier number `step` (as slot(); see above).
  uint8_t* smallSlot(int r, uint64_t step) const {
    return arrivals_ + (static_cast<size_t>(r) * 2 + (step + 1) % 2) * kArrivalBytes +
           kArrivalHeaderBytes;
  }
  // The number of the next barrier (every rank counts the same sequence).
  uint64_t step() const { return step_; }

 protected:
  // One rank's arrival at a barrier: a header (the arrival word and the fingerprint hash), then
  // the small slot. Two per rank, by the barrier's number mod 2.
  static constexpr size_t kArrivalHeaderBytes = 16;
  static constexpr size_t kArrivalBytes = kArrivalHeaderBytes + kSmallSlotBytes;
  static_assert(kArrivalBytes % 64 == 0, "arrivals are whole cache lines");
  explicit StagingSlots(size_t slotBytes) : slotBytes_(slotBytes) {}
  ~StagingSlots() = default;
  uint8_t* slots_ = nullptr;     // 3 x size slots, set by the transport once its memory is mapped
  uint8_t* arrivals_ = nullptr;  // 2 x size arrivals, likewise
  const size_t slotBytes_;
  uint64_t step_ = 0;  // advanced by the transport's barrier
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
