#include "c10d/backends/verbs/p2p_engine.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

constexpr uint32_t kMagic = 0xC10D5EEDu;
constexpr size_t kDrainChunk = 64 << 10;

size_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{1} << 40;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

}  // namespace

P2PEngine::P2PEngine(Transport& t, int rank, int size, std::string groupName,
                     std::function<void(std::exception_ptr)> onError, size_t maxUnexpectedBytes,
                     int sliceUs)
    : t_(t),
      rank_(rank),
      size_(size),
      group_(std::move(groupName)),
      onError_(std::move(onError)),
      maxUnexpectedBytes_(maxUnexpectedBytes ? maxUnexpectedBytes : physicalMemoryBytes()),
      sends_(size),
      incoming_(size),
      gone_(size) {
  thread_ = std::thread([this, sliceUs] {
    pthread_setname_np(pthread_self(), "c10d-verbs-p2p");
    requestShortSlice(sliceUs);
    loop();
  });
}

P2PEngine::P2PEngine(Transport& t, int rank, int size, std::string groupName,
                     std::function<void(std::exception_ptr)> onError, size_t maxUnexpectedBytes,
                     ManualDrive)
    : t_(t),
      rank_(rank),
      size_(size),
      group_(std::move(groupName)),
      onError_(std::move(onError)),
      maxUnexpectedBytes_(maxUnexpectedBytes ? maxUnexpectedBytes : physicalMemoryBytes()),
      sends_(size),
      incoming_(size),
      gone_(size) {}

bool P2PEngine::poll() {
  if (thread_.joinable() || stop_.load()) return false;
  try {
    bool pending = false;
    return round(&pending);
  } catch (...) {
    fatal(std::current_exception());
    return false;
  }
}

P2PEngine::~P2PEngine() {
  stop();
}

void P2PEngine::stop(std::exception_ptr why) {
  if (stop_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  t_.wakeSelf(kP2PChannel);
  if (thread_.joinable()) thread_.join();
  failAll(why ? why : std::make_exception_ptr(Error("verbs: group " + group_ + " shut down")));
}

std::shared_ptr<Work> P2PEngine::send(Tensor t, int dst, int tag, uint64_t seq,
                                      Milliseconds timeout) {
  auto work = std::make_shared<BackendWork>(OpType::kSend, seq, group_, timeout);
  SendOp op;
  op.work = work;
  op.peer = dst;
  op.hdr = Header{kMagic, tag, t.nbytes()};
  op.data = static_cast<const uint8_t*>(t.data);
  {
    MutexLock g(mu_);
    if (failed_) {
      work->finish(failed_);
      return work;
    }
    newSends_.push_back(std::move(op));
  }
  t_.wakeSelf(kP2PChannel);
  return work;
}

std::shared_ptr<Work> P2PEngine::recv(Tensor t, int src, int tag, uint64_t seq,
                                      Milliseconds timeout) {
  auto work = std::make_shared<BackendWork>(src < 0 ? OpType::kRecvAnySource : OpType::kRecv, seq,
                                            group_, timeout);
  RecvOp op{work, src, tag, static_cast<uint8_t*>(t.data), t.nbytes()};
  {
    MutexLock g(mu_);
    if (failed_) {
      work->finish(failed_);
      return work;
    }
    newRecvs_.push_back(std::move(op));
  }
  t_.wakeSelf(kP2PChannel);
  return work;
}

void P2PEngine::failMismatched(const RecvOp& op, uint64_t len, int peer, int tag) const {
  op.work->finish(std::make_exception_ptr(Error(
      detail::str("verbs: recv of ", op.len, " bytes on rank ", rank_, " matched a message of ",
                  len, " bytes from rank ", peer, " (tag ", tag, ") in group ", group_))));
}

void P2PEngine::deliverPosted(RecvOp op) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if ((op.src < 0 || op.src == it->src) && op.tag == it->tag) {
      if (it->data.size != op.len) {
        failMismatched(op, it->data.size, it->src, it->tag);
      } else {
        if (op.len > 0) std::memcpy(op.data, it->data.bytes.get(), op.len);
        op.work->setSourceRank(it->src);
        op.work->finish();
      }
      unexpected_.erase(it);
      return;
    }
  }
  // Then a message still arriving (later than every complete one from its sender). Any source:
  // the lowest rank's, as the complete ones are taken in arrival order.
  if (op.src >= 0) {
    if (adoptArriving(op, op.src)) return;
  } else {
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && adoptArriving(op, p)) return;
  }
  if (op.src >= 0 && gone_[op.src]) {
    op.work->finish(gone_[op.src]);
    return;
  }
  if (op.src < 0) {
    std::exception_ptr last;
    bool anyAlive = false;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      anyAlive |= !gone_[p];
      if (gone_[p]) last = gone_[p];
    }
    if (!anyAlive && last) {
      op.work->finish(last);
      return;
    }
  }
  posted_.push_back(std::move(op));
}

bool P2PEngine::adoptArriving(RecvOp& op, int peer) {
  Incoming& in = incoming_[peer];
  if (in.hdrDone < sizeof(Header) || in.matched || in.discard || in.hdr.tag != op.tag) return false;
  if (in.hdr.len != op.len) {
    failMismatched(op, in.hdr.len, peer, in.hdr.tag);
    in.discard = true;  // the rest is drained, as for a mismatch seen at the header
  } else {
    if (in.done > 0) std::memcpy(op.data, in.buf.bytes.get(), in.done);
    in.target = std::move(op);
    in.matched = true;
  }
  in.buf = {};
  return true;
}

bool P2PEngine::progressSends(int peer) {
  bool progress = false;
  auto& q = sends_[peer];
  while (!q.empty()) {
    SendOp& op = q.front();
    constexpr size_t kH = sizeof(Header);
    if (op.done < kH) {
      size_t n = t_.trySend(kP2PChannel, peer, reinterpret_cast<const uint8_t*>(&op.hdr) + op.done,
                            kH - op.done);
      op.done += n;
      progress |= n > 0;
      if (op.done < kH) return progress;
    }
    size_t total = kH + op.hdr.len;
    if (op.done < total) {
      size_t n = t_.trySend(kP2PChannel, peer, op.data + (op.done - kH), total - op.done);
      op.done += n;
      progress |= n > 0;
      if (op.done < total) return progress;
    }
    // Zero-copy transports may still read the buffer: finish once their sends completed.
    unfinished_.push_back(std::move(op.work));
    q.pop_front();
    progress = true;
  }
  return progress;
}

bool P2PEngine::progressIncoming(int peer) {
  bool progress = false;
  Incoming& in = incoming_[peer];
  for (;;) {
    constexpr size_t kH = sizeof(Header);
    if (in.hdrDone < kH) {
      size_t n = t_.tryRecv(kP2PChannel, peer, reinterpret_cast<uint8_t*>(&in.hdr) + in.hdrDone,
                            kH - in.hdrDone);
      in.hdrDone += n;
      progress |= n > 0;
      if (in.hdrDone < kH) return progress;
      if (in.hdr.magic != kMagic)
        C10D_THROW(CommError, "verbs: corrupt p2p stream from rank ", peer, " on rank ", rank_,
                   " in group ", group_);
      in.matched = false;
      in.discard = false;
      in.done = 0;
      auto it = posted_.begin();
      while (it != posted_.end() && !((it->src < 0 || it->src == peer) && it->tag == in.hdr.tag))
        ++it;
      // The length is the peer's word: believed for a posted recv of exactly that size, else
      // only up to what this rank keeps for an unmatched message.
      if ((it == posted_.end() || it->len != in.hdr.len) && in.hdr.len > maxUnexpectedBytes_) {
        C10D_THROW(CommError, "verbs: rank ", peer, " sent rank ", rank_, " a p2p header of ",
                   in.hdr.len, " bytes (tag ", in.hdr.tag, ") in group ", group_,
                   ", matching no posted recv of that size and past the limit of ",
                   maxUnexpectedBytes_, " bytes for an unmatched message: corrupt stream");
      }
      if (it != posted_.end()) {
        in.target = std::move(*it);
        posted_.erase(it);
        in.matched = in.target.len == in.hdr.len;
        if (!in.matched) {
          failMismatched(in.target, in.hdr.len, peer, in.hdr.tag);
          in.target = RecvOp{};
          in.discard = true;  // drained through drain_, never buffered whole
        }
      }
      if (!in.matched && !in.discard) in.buf = Payload::of(in.hdr.len);
    }
    if (in.done < in.hdr.len) {
      size_t n;
      if (in.discard) {
        drain_.resize(kDrainChunk);
        n = t_.tryRecv(kP2PChannel, peer, drain_.data(),
                       std::min<uint64_t>(kDrainChunk, in.hdr.len - in.done));
      } else {
        uint8_t* dst = in.matched ? in.target.data : in.buf.bytes.get();
        n = t_.tryRecv(kP2PChannel, peer, dst + in.done, in.hdr.len - in.done);
      }
      in.done += n;
      progress |= n > 0;
      if (in.done < in.hdr.len) return progress;
    }
    if (in.matched) {
      in.target.work->setSourceRank(peer);
      in.target.work->finish();
      in.target = RecvOp{};
    } else if (!in.discard) {
      // No recv took it while it arrived (one posted meanwhile would have: adoptArriving).
      unexpected_.push_back(Unexpected{peer, in.hdr.tag, std::move(in.buf)});
    }
    in.buf = {};
    in.hdrDone = 0;
    progress = true;
  }
}

void P2PEngine::peerFailed(int peer, std::exception_ptr e) {
  if (gone_[peer]) return;
  gone_[peer] = e;
  for (auto& op : sends_[peer]) op.work->finish(e);
  sends_[peer].clear();
  Incoming& in = incoming_[peer];
  if (in.matched && in.target.work) in.target.work->finish(e);
  in = Incoming{};
  bool anyAlive = false;
  for (int p = 0; p < size_; ++p) anyAlive |= p != rank_ && !gone_[p];
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (it->src == peer || (it->src < 0 && !anyAlive)) {
      it->work->finish(e);
      it = posted_.erase(it);
    } else {
      ++it;
    }
  }
}

void P2PEngine::failAll(std::exception_ptr e) {
  std::vector<SendOp> ns;
  std::vector<RecvOp> nr;
  {
    MutexLock g(mu_);
    if (!failed_) failed_ = e;
    ns.swap(newSends_);
    nr.swap(newRecvs_);
  }
  for (auto& op : ns) op.work->finish(e);
  for (auto& op : nr) op.work->finish(e);
  for (auto& q : sends_) {
    for (auto& op : q) op.work->finish(e);
    q.clear();
  }
  for (auto& w : unfinished_) w->finish(e);
  unfinished_.clear();
  for (auto& op : posted_) op.work->finish(e);
  posted_.clear();
  for (auto& in : incoming_)
    if (in.matched && in.target.work) in.target.work->finish(e);
}

bool P2PEngine::round(bool* pending) {
  bool progress = false;
  {
    std::vector<SendOp> ns;
    std::vector<RecvOp> nr;
    {
      MutexLock g(mu_);
      ns.swap(newSends_);
      nr.swap(newRecvs_);
    }
    for (auto& op : ns) {
      if (gone_[op.peer])
        op.work->finish(gone_[op.peer]);
      else
        sends_[op.peer].push_back(std::move(op));
    }
    for (auto& op : nr) deliverPosted(std::move(op));
    progress = !ns.empty() || !nr.empty();  // new ops start a stall of their own (loop())
  }
  *pending = !posted_.empty();
  interests_.clear();
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || gone_[p]) continue;
    try {
      progress |= progressSends(p);
      progress |= progressIncoming(p);
    } catch (const CommError&) {
      peerFailed(p, std::current_exception());
      continue;
    }
    *pending |= !sends_[p].empty() || incoming_[p].hdrDone > 0;
    interests_.push_back(Interest{p, !sends_[p].empty(), true});
  }
  if (!unfinished_.empty() && t_.sendsComplete(kP2PChannel)) {
    for (auto& w : unfinished_) w->finish();
    unfinished_.clear();
    progress = true;
  }
  *pending |= !unfinished_.empty();
  return progress;
}

void P2PEngine::fatal(std::exception_ptr e) {
  failAll(e);
  if (onError_) onError_(e);
}

void P2PEngine::loop() {
  auto lastCheck = Clock::now();
  // Spinning (transport.h, SpinWindow): a stall with ops pending spins once from the last
  // progress; an idle thread watches for kIdleSpin after its last op (a program that sends in a
  // loop posts the next one by then), then sleeps until woken: an idle p2p thread must not take
  // CPU from its rank's threads.
  constexpr auto kIdleSpin = std::chrono::microseconds(200);
  Clock::time_point lastProgress = Clock::time_point::min();
  try {
    while (!stop_.load()) {
      uint32_t token = t_.progressToken(kP2PChannel);
      bool pending = false;
      if (round(&pending)) {
        lastProgress = Clock::now();
        continue;
      }
      auto now = Clock::now();
      if (pending && now - lastCheck > std::chrono::milliseconds(20)) {
        lastCheck = now;
        for (int p = 0; p < size_; ++p) {
          if (p == rank_ || gone_[p] || !t_.peerGone(p)) continue;
          // A peer that finished and exited may still be delivering a large send on this
          // channel (tcp: its collective socket closed first): wait for this stream's end.
          if (!t_.streamEnded(kP2PChannel, p)) continue;
          // Drain what it sent before it went, then fail what still needs it.
          try {
            while (progressIncoming(p)) {
            }
          } catch (const CommError&) {
          }
          peerFailed(p, std::make_exception_ptr(CommError(detail::str(
                            "verbs: rank ", p, " is gone (exited or died); seen by rank ", rank_,
                            " in group ", group_, " (", t_.name(), ")"))));
        }
      }
      // Idle past its watch: sleep at once (not even the busy poll each time it wakes).
      const bool watching =
          lastProgress != Clock::time_point::min() && (pending || now < lastProgress + kIdleSpin);
      const SpinWindow spin = !watching ? SpinWindow::none()
                              : pending ? SpinWindow{lastProgress}
                                        : SpinWindow{lastProgress, lastProgress + kIdleSpin};
      t_.wait(kP2PChannel, token, interests_, Milliseconds(pending ? 10 : 50), spin);
    }
  } catch (...) {
    fatal(std::current_exception());
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
