#include "backends/verbs/comm.h"

#include <algorithm>
#include <sstream>

#include "backends/verbs/collective_engine.h"
#include "backends/verbs/shm_transport.h"
#include "c10d/error.h"

namespace c10d {
namespace verbs {

Comm::Comm(Transport& t, int ch, int rank, int size, Clock::time_point deadline, OpType op,
           uint64_t seq, const std::string& group, Milliseconds timeout)
    : t_(t),
      ch_(ch),
      rank_(rank),
      size_(size),
      deadline_(deadline),
      op_(op),
      seq_(seq),
      group_(group),
      timeout_(timeout),
      // The issue time (the deadline's origin; process_group_verbs caps timeouts at a year): no
      // clock read per op.
      lastPeerCheck_(deadline - std::min(timeout, Milliseconds(365LL * 24 * 3600 * 1000))) {
  checkFn_ = [this] { check(); };
}

std::string Comm::what() const {
  return detail::str(c10d::toString(op_), " #", seq_, " in group ", group_);
}

void Comm::checkPeers() {
  try {
    t_.checkPeers();
  } catch (const CommError& e) {
    std::string gone;
    int n = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || !t_.peerGone(r)) continue;
      gone += (n++ ? ", rank " : "rank ") + std::to_string(r);
    }
    if (n < 2) throw;
    throw CommError(std::string(e.what()) + "; gone by now: " + gone);
  }
}

void Comm::checkAbort() const {
  if (abort_ != nullptr && abort_->load(std::memory_order_relaxed))
    C10D_THROW(Error, what(), " on rank ", rank_, ": the group was shut down while the op ran");
}

void Comm::setOp(const OpDesc* desc, const OpDesc::Wire* wire, bool headers) {
  desc_ = desc;
  wire_ = wire;
  if (headers && size_ > 1) {
    hdr_[0] = P2POp{true, (rank_ + 1) % size_,
                    reinterpret_cast<uint8_t*>(const_cast<OpDesc::Wire*>(wire)), sizeof(*wire), 0};
    hdr_[1] = P2POp{false, (rank_ + size_ - 1) % size_, reinterpret_cast<uint8_t*>(&hdrIn_),
                    sizeof(hdrIn_), 0};
  }
}

void Comm::finishHeaders() {
  if (!headersPending()) return;
  std::vector<P2POp> none;
  run(none);
}

void Comm::mismatch(int peer, const OpDesc::Wire& theirs) const {
  throw CollectiveMismatchError(mismatchMessage(group_, rank_, *desc_, peer,
                                                OpDesc::fromWire(theirs)) +
                                detail::str(" (seen by rank ", rank_, ", verbs/", t_.name(), ")"));
}

void Comm::verifyHeader() {
  if (hdrIn_ != *wire_) mismatch(hdr_[1].peer, hdrIn_);
}

void Comm::checkBoard() {
  if (shm_ == nullptr || wire_ == nullptr) return;
  for (int q = 0; q < size_; ++q) {
    OpDesc::Wire w;
    if (q != rank_ && shm_->peerOp(q, &w) && w.collSeq == wire_->collSeq && w != *wire_)
      mismatch(q, w);
  }
}

void Comm::shmBarrier() {
  try {
    shm_->barrier(checkFn_, wire_);
  } catch (const ShmTransport::Mismatch& m) {
    mismatch(m.rank, m.theirs);
  } catch (const ShmTransport::PeerLeft& e) {
    std::string who;
    for (size_t i = 0; i < e.ranks.size(); ++i)
      who += (i ? ", rank " : "rank ") + std::to_string(e.ranks[i]);
    C10D_THROW(CommError, what(), ": ", who, " left the group (shut down or exited) while rank ",
               rank_, " waited in a barrier of this host's ranks (verbs/shm)");
  }
}

void Comm::check() {
  checkAbort();
  if (handoff_ != nullptr) handoff_->handOff();  // about to sleep: not on the caller's thread
  checkBoard();
  checkPeers();
  if (Clock::now() >= deadline_)
    C10D_THROW(TimeoutError, what(), " timed out after ", timeout_.count(), " ms on rank ", rank_,
               " (verbs/", t_.name(), ")");
}

void Comm::run(std::vector<P2POp>& ops) {
  auto at = [&](size_t i) -> P2POp& { return i < 2 ? hdr_[i] : ops[i - 2]; };
  std::vector<Interest> interests;
  bool repolled = false;  // a pending peer was seen gone: one more poll before failing
  for (;;) {
    uint32_t token = t_.progressToken(ch_);
    bool progress = false, all = true;
    interests.clear();
    // The fingerprint headers (hdr_, empty unless exchanged) go first: a later op to the same
    // peer in the same direction waits for them, so they lead the op's bytes on each stream.
    const size_t total = ops.size() + 2;
    for (size_t i = 0; i < total; ++i) {
      P2POp& op = at(i);
      if (op.done >= op.len) continue;
      all = false;
      bool blocked = false;
      for (size_t j = 0; j < i && !blocked; ++j) {
        const P2POp& o = at(j);
        blocked = o.peer == op.peer && o.send == op.send && o.done < o.len;
      }
      if (blocked) continue;
      size_t n = op.send ? t_.trySend(ch_, op.peer, op.buf + op.done, op.len - op.done)
                         : t_.tryRecv(ch_, op.peer, op.buf + op.done, op.len - op.done);
      op.done += n;
      if (n > 0) progress = true;
      if (op.done < op.len)
        interests.push_back(Interest{op.peer, op.send, !op.send});
      else if (i == 1)
        verifyHeader();  // before anything else from that peer is used
    }
    if (all && t_.sendsComplete(ch_)) return;
    if (progress) {
      repolled = false;
      continue;
    }
    checkAbort();
    auto now = Clock::now();
    if (handoff_ != nullptr && handoff_->inlined()) {
      // Inline on the caller's thread: poll (no sleep) until the budget is spent, then continue
      // on the engine thread.
      if (!handoff_->due(now)) {
        t_.wait(ch_, token, interests, Milliseconds(0));
        continue;
      }
      handoff_->handOff();
      now = Clock::now();
    }
    if (now >= deadline_ || now - lastPeerCheck_ > std::chrono::milliseconds(20)) {
      lastPeerCheck_ = now;
      // A peer this op still waits on and that is gone (even one that shut down cleanly) fails
      // the op, after one more poll: it may have written what we wait for just before it went.
      const P2POp* gone = nullptr;
      for (size_t i = 0; i < ops.size() + 2; ++i)
        if (!gone && at(i).done < at(i).len && t_.peerGone(at(i).peer)) gone = &at(i);
      if (gone && !repolled) {
        repolled = true;
        lastPeerCheck_ = now - std::chrono::milliseconds(21);  // check again right after the poll
        continue;
      }
      if (gone) {
        C10D_THROW(CommError, what(), ": rank ", gone->peer, " is gone (",
                   gone->send ? "send to" : "recv from", " it pending at ", gone->done, "/",
                   gone->len, " bytes); seen by rank ", rank_, " (verbs/", t_.name(), ")");
      }
      checkBoard();
      checkPeers();
      if (now >= deadline_) {
        std::ostringstream pending;
        for (size_t i = 0; i < ops.size() + 2; ++i) {
          const P2POp& op = at(i);
          if (op.done < op.len)
            pending << " " << (op.send ? "send to " : "recv from ") << op.peer << " (" << op.done
                    << "/" << op.len << " bytes" << (i < 2 ? ", op fingerprint" : "") << ")";
        }
        C10D_THROW(TimeoutError, what(), " timed out after ", timeout_.count(), " ms on rank ",
                   rank_, " (verbs/", t_.name(), "); pending:", pending.str());
      }
    }
    auto left = std::chrono::duration_cast<Milliseconds>(deadline_ - now);
    t_.wait(ch_, token, interests, std::max(Milliseconds(1), std::min(Milliseconds(10), left)));
  }
}

void Comm::send(int peer, const void* buf, size_t n) {
  std::vector<P2POp> ops{{true, peer, static_cast<uint8_t*>(const_cast<void*>(buf)), n, 0}};
  run(ops);
}

void Comm::recv(int peer, void* buf, size_t n) {
  std::vector<P2POp> ops{{false, peer, static_cast<uint8_t*>(buf), n, 0}};
  run(ops);
}

void Comm::sendRecv(int to, const void* sbuf, size_t sn, int from, void* rbuf, size_t rn) {
  std::vector<P2POp> ops{{true, to, static_cast<uint8_t*>(const_cast<void*>(sbuf)), sn, 0},
                         {false, from, static_cast<uint8_t*>(rbuf), rn, 0}};
  run(ops);
}

uint8_t* Comm::scratch(size_t n, int which) {
  std::vector<uint8_t>* v = scratch_[which] ? scratch_[which] : &ownScratch_[which];
  if (v->size() < n) v->resize(n);
  return v->data();
}

}  // namespace verbs
}  // namespace c10d
