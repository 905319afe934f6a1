#include "c10d/backends/verbs/comm.h"

#include <algorithm>
#include <exception>
#include <sstream>

#include "c10d/backends/verbs/collective_engine.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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

HostLayout HostLayout::fromHostIds(const std::vector<std::string>& hostIdOfRank) {
  HostLayout l;
  std::vector<std::string> ids;
  l.hostOf.resize(hostIdOfRank.size());
  for (size_t r = 0; r < hostIdOfRank.size(); ++r) {
    const auto it = std::find(ids.begin(), ids.end(), hostIdOfRank[r]);
    const size_t h = static_cast<size_t>(it - ids.begin());
    if (it == ids.end()) {
      ids.push_back(hostIdOfRank[r]);
      l.hosts.emplace_back();
    }
    l.hosts[h].push_back(static_cast<int>(r));
    l.hostOf[r] = static_cast<int>(h);
  }
  bool someShared = false;
  l.balanced = l.hosts.size() > 1;
  for (const auto& h : l.hosts) {
    someShared = someShared || h.size() > 1;
    l.balanced = l.balanced && h.size() == l.hosts[0].size() && h.size() > 1;
  }
  l.multiHost = l.hosts.size() > 1 && someShared;
  return l;
}

size_t HostLayout::localIndex(int r) const {
  const std::vector<int>& local = hostRanks(r);
  return static_cast<size_t>(std::find(local.begin(), local.end(), r) - local.begin());
}

std::vector<int> HostLayout::column(size_t i) const {
  std::vector<int> c;
  for (const auto& h : hosts) c.push_back(h[i]);
  return c;
}

void Comm::setShm(ShmTransport* s) {
  shm_ = s;
  slots_ = s;
}

Comm::View::View(Comm& c, const std::vector<int>& members) : c_(c) {
  C10D_CHECK_ARG(c.view_ == nullptr, c.what(), ": nested Comm views");
  const auto it = std::find(members.begin(), members.end(), c.rank_);
  C10D_CHECK_ARG(it != members.end(), c.what(), ": rank ", c.rank_, " is not in its own view");
  c.viewRank_ = static_cast<int>(it - members.begin());
  c.view_ = &members;
  // The group's shm workspace spans the whole group, not the view.
  c.shmOutsideView_ = c.shm_;
  c.setShm(nullptr);
}

Comm::View::~View() {
  c_.setShm(c_.shmOutsideView_);
  c_.view_ = nullptr;
}

std::string Comm::what() const {
  return detail::str(c10d::toString(op_), " #", seq_, " in group ", group_);
}

void Comm::checkPeers() {
  if (revokePoll_ != nullptr) {
    const auto now = Clock::now();
    if (lastRevokePoll_ == Clock::time_point{}) {
      lastRevokePoll_ = now;
    } else if (now - lastRevokePoll_ >= kRevokePoll) {
      lastRevokePoll_ = now;
      (*revokePoll_)();
    }
  }
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

std::string Comm::goneNote() {
  std::string gone;
  int n = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || !t_.peerGone(r)) continue;
    gone += (n++ ? ", rank " : "rank ") + std::to_string(r);
  }
  return n == 0 ? std::string() : "; gone by now (died or left the group): " + gone;
}

void Comm::checkAbort() const {
  if (abort_ != nullptr && abort_->load(std::memory_order_relaxed))
    C10D_THROW(Error, what(), " on rank ", rank_, ": the group was shut down while the op ran");
  if (revoked_ != nullptr && revoked_->load(std::memory_order_relaxed))
    C10D_THROW(CommError, what(), " on rank ", rank_, ": the group was revoked while the op ran");
}

void Comm::setOp(const OpDesc* desc, const OpDesc::Wire* wire,
                 std::vector<PeerFingerprint>* peers) {
  desc_ = desc;
  wire_ = wire;
  peerFps_ = size_ > 1 ? peers : nullptr;
  stamp_ = desc->seq + 1;  // 0 is never an op's
}

void Comm::finishHeaders() {
  if (peerFps_ == nullptr) return;
  constexpr uint8_t kLen = sizeof(OpDesc::Wire);
  const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
  std::vector<P2POp> ops;
  PeerFingerprint& r = peerFp(right);
  if (r.sent < kLen) {
    ops.push_back(P2POp{true, right,
                        reinterpret_cast<uint8_t*>(const_cast<OpDesc::Wire*>(wire_)) + r.sent,
                        static_cast<size_t>(kLen - r.sent), 0});
    r.sent = kLen;  // claimed: run() moves the rest as plain bytes
  }
  PeerFingerprint& l = peerFp(left);
  const bool readLeft = l.got < kLen;
  if (readLeft) {
    ops.push_back(P2POp{false, left, reinterpret_cast<uint8_t*>(&l.in) + l.got,
                        static_cast<size_t>(kLen - l.got), 0});
    l.got = kLen;
  }
  if (ops.empty()) return;
  run(ops);
  if (readLeft) verifyHeader(left, l.in);
}

void Comm::mismatch(int peer, const OpDesc::Wire& theirs) const {
  const std::string where = detail::str(" (seen by rank ", rank_, ", verbs/", t_.name(), ")");
  if (onlyPartsDiffer(*wire_, theirs)) {
    throw PartsMismatchError(
        mismatchMessage(group_, rank_, *desc_, peer, OpDesc::fromWire(theirs)) + where, peer);
  }
  throw mismatchError(group_, rank_, *desc_, peer, OpDesc::fromWire(theirs), where);
}

void Comm::verifyHeader(int peer, const OpDesc::Wire& theirs) {
  if (theirs != *wire_) mismatch(peer, theirs);
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
    shm_->barrier(checkFn_, wire_,
                  handoff_ != nullptr ? handoff_->until() : Clock::time_point::max());
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
               " (verbs/", t_.name(), ")", goneNote());
}

void Comm::run(std::vector<P2POp>& ops) {
  if (view_ != nullptr) {
    // Peers are view positions: run on group ranks, then give the caller its positions back.
    for (P2POp& op : ops) op.peer = (*view_)[static_cast<size_t>(op.peer)];
    struct Restore {
      const std::vector<int>& members;
      std::vector<P2POp>& ops;
      ~Restore() {
        for (P2POp& op : ops) {
          op.peer = static_cast<int>(std::find(members.begin(), members.end(), op.peer) -
                                     members.begin());
        }
      }
    } restore{*view_, ops};
    const std::vector<int>* view = view_;
    view_ = nullptr;  // runGroup() sees group ranks only
    try {
      runGroup(ops);
    } catch (...) {
      view_ = view;
      throw;
    }
    view_ = view;
    return;
  }
  runGroup(ops);
}

void Comm::runGroup(std::vector<P2POp>& ops) {
  constexpr uint8_t kFp = sizeof(OpDesc::Wire);
  // Sends whose receivers still read from our buffers are withdrawn when this throws: the
  // caller may reuse the buffers at once (transport.h, revokeSends).
  struct RevokeOnThrow {
    Transport& t;
    int ch;
    int uncaught = std::uncaught_exceptions();
    ~RevokeOnThrow() {
      if (std::uncaught_exceptions() > uncaught) t.revokeSends(ch);
    }
  } revokeOnThrow{t_, ch_};
  std::vector<Interest> interests;
  bool repolled = false;  // a pending peer was seen gone: one more poll before failing
  // When the current stall began (unset while the op progresses): its waits spin once from there.
  Clock::time_point stalled{};
  for (;;) {
    uint32_t token = t_.progressToken(ch_);
    bool progress = false, all = true;
    interests.clear();
    for (size_t i = 0; i < ops.size(); ++i) {
      P2POp& op = ops[i];
      if (op.done >= op.len) continue;
      all = false;
      bool blocked = false;
      for (size_t j = 0; j < i && !blocked; ++j)
        blocked = ops[j].peer == op.peer && ops[j].send == op.send && ops[j].done < ops[j].len;
      if (blocked) continue;
      // The first message of the op on each stream carries the fingerprint ahead of its bytes.
      PeerFingerprint* fp = peerFps_ != nullptr ? &peerFp(op.peer) : nullptr;
      size_t n;
      if (fp != nullptr && op.send && fp->sent < kFp) {
        const size_t hn = kFp - fp->sent;
        n = t_.trySendHdr(ch_, op.peer, reinterpret_cast<const uint8_t*>(wire_) + fp->sent, hn,
                          op.buf + op.done, op.len - op.done);
        const size_t kh = std::min(n, hn);
        fp->sent = static_cast<uint8_t>(fp->sent + kh);
        op.done += n - kh;
      } else if (fp != nullptr && !op.send && fp->got < kFp) {
        const size_t hn = kFp - fp->got;
        n = t_.tryRecvHdr(ch_, op.peer, reinterpret_cast<uint8_t*>(&fp->in) + fp->got, hn,
                          op.buf + op.done, op.len - op.done);
        const size_t kh = std::min(n, hn);
        fp->got = static_cast<uint8_t>(fp->got + kh);
        op.done += n - kh;
        // Before run() returns, so before the algorithm uses or forwards what came with it.
        if (kh > 0 && fp->got == kFp) verifyHeader(op.peer, fp->in);
      } else {
        n = op.send ? t_.trySend(ch_, op.peer, op.buf + op.done, op.len - op.done)
                    : t_.tryRecv(ch_, op.peer, op.buf + op.done, op.len - op.done);
        op.done += n;
      }
      if (n > 0) progress = true;
      if (op.done < op.len) interests.push_back(Interest{op.peer, op.send, !op.send});
    }
    if (all && t_.sendsComplete(ch_)) return;
    if (progress) {
      repolled = false;
      stalled = Clock::time_point{};
      continue;
    }
    checkAbort();
    auto now = Clock::now();
    if (stalled == Clock::time_point{}) stalled = now;
    if (handoff_ != nullptr && handoff_->inlined()) {
      // Inline on the caller's thread: poll (no sleep) until the budget is spent, then continue
      // on the engine thread (which spins out the rest of the stall's spin phase).
      if (!handoff_->due(now)) {
        t_.wait(ch_, token, interests, Milliseconds(0), SpinWindow{stalled, handoff_->until()});
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
      for (const auto& op : ops)
        if (!gone && op.done < op.len && t_.peerGone(op.peer)) gone = &op;
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
        for (const auto& op : ops)
          if (op.done < op.len)
            pending << " " << (op.send ? "send to rank " : "recv from rank ") << op.peer << " ("
                    << op.done << "/" << op.len << " bytes)";
        if (pending.tellp() == 0) pending << " sends not yet read by their receivers (single copy)";
        C10D_THROW(TimeoutError, what(), " timed out after ", timeout_.count(), " ms on rank ",
                   rank_, " (verbs/", t_.name(), "); pending:", pending.str(), goneNote());
      }
    }
    auto left = std::chrono::duration_cast<Milliseconds>(deadline_ - now);
    t_.wait(ch_, token, interests, std::max(Milliseconds(1), std::min(Milliseconds(10), left)),
            SpinWindow{stalled});
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
C10D_NAMESPACE_END
}  // namespace c10d
