// Point-to-point ops of the gloo backend and the waiter threads that complete them.
//
// Gloo's TCP transport matches a send with a recv by (peer, slot) and moves the data only once both
// sides have posted, so a send may wait for the peer's recv indefinitely. The worker therefore only
// posts the op (in issue order, after the collectives issued before it) and hands the wait to a
// waiter thread; the collectives behind it are never held up.
#include <pthread.h>

#include <gloo/transport/unbound_buffer.h>

#include "c10d/backends/gloo/helpers.h"
#include "c10d/backends/gloo/p2p_waiters.h"
#include "c10d/backends/gloo/p2p_work.h"
#include "c10d/backends/gloo/process_group_gloo.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace glooimpl {

bool P2pWaiters::submit(std::function<void()> job) {
  MutexLock lock(mu_);
  if (stopping_) return false;
  jobs_.push_back(std::move(job));
  if (idle_ == 0 && static_cast<int>(threads_.size()) < maxThreads_) {
    threads_.emplace_back([this] { loop(); });
  } else {
    cv_.notify_one();
  }
  return true;
}

void P2pWaiters::stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
    cv_.notify_all();
  }
  for (auto& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

void P2pWaiters::loop() {
  pthread_setname_np(pthread_self(), "c10d-gloo-p2p");
  MutexLock lock(mu_);
  for (;;) {
    if (jobs_.empty()) {
      if (stopping_) return;
      ++idle_;
      lock.wait(cv_, [&]() C10D_REQUIRES(mu_) { return stopping_ || !jobs_.empty(); });
      --idle_;
      continue;
    }
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;
    lock.lock();
  }
}

}  // namespace glooimpl

namespace {

// Gloo's collectives use slot prefixes 0x01..0x08 in the top byte; user tags get their own.
uint64_t p2pSlot(int tag) {
  return (uint64_t{0xC1} << 56) | static_cast<uint32_t>(tag);
}

}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::postP2p(Tensor tensor, int peer, bool isSend,
                                                const SendRecvOptions& opts, uint64_t seq) {
  C10D_CHECK_ARG(peer != rank(), "gloo: ", isSend ? "send to" : "recv from", " self (rank ", rank(),
                 ") is not supported in group ", name());
  const OpType op = isSend ? OpType::kSend : (peer < 0 ? OpType::kRecvAnySource : OpType::kRecv);
  auto work = std::make_shared<glooimpl::P2pWork>(op, seq, name(), opts.timeout, *context_,
                                                  tensor.data, tensor.nbytes(), !isSend);
  const Milliseconds timeout = glooimpl::glooTimeout(opts.timeout);
  const uint64_t slot = p2pSlot(opts.tag);
  std::weak_ptr<glooimpl::P2pWork> weak = work;
  return enqueueWork(work, [this, work, weak, peer, isSend, slot, timeout]() -> Continuation {
    auto& buf = work->buffer();
    if (isSend) {
      buf.send(peer, slot);
    } else if (peer >= 0) {
      buf.recv(peer, slot);
    } else {
      std::vector<int> sources;
      for (int r = 0; r < size(); ++r) {
        if (r != rank()) sources.push_back(r);
      }
      buf.recv(sources, slot);
    }
    {
      MutexLock lock(mu_);
      // Drop entries of completed ops so the list stays as long as what is in flight.
      std::vector<std::weak_ptr<glooimpl::P2pWork>> live;
      for (auto& w : posted_) {
        auto p = w.lock();
        if (p && !p->isCompleted()) live.push_back(w);
      }
      live.push_back(weak);
      posted_.swap(live);
    }
    return [work, isSend, timeout]() {
      int source = -1;
      auto& b = work->buffer();
      bool completed = isSend ? b.waitSend(&source, timeout) : b.waitRecv(&source, timeout);
      // Not completed: aborted or cancelled, and the Work already says so.
      if (completed && !isSend) work->setSourceRank(source);
    };
  });
}

std::shared_ptr<Work> ProcessGroupGloo::doSend(Tensor tensor, int dstRank,
                                               const SendRecvOptions& opts, uint64_t seq) {
  return postP2p(tensor, dstRank, /*isSend=*/true, opts, seq);
}

std::shared_ptr<Work> ProcessGroupGloo::doRecv(Tensor tensor, int srcRank,
                                               const SendRecvOptions& opts, uint64_t seq) {
  return postP2p(tensor, srcRank, /*isSend=*/false, opts, seq);
}

C10D_NAMESPACE_END
}  // namespace c10d
