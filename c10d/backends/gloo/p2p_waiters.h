// P2pWaiters: the threads ("c10d-gloo-p2p") that wait for posted sends/recvs of one gloo group to
// complete. A thread is started when a job arrives and none is idle, up to `maxThreads`; past that,
// jobs queue. Threads live until stop(), which runs the jobs already queued (the group aborts their
// waits first, so they return at once) and joins every thread. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {

class P2pWaiters {
 public:
  explicit P2pWaiters(int maxThreads) : maxThreads_(maxThreads) {}
  ~P2pWaiters() { stop(); }
  P2pWaiters(const P2pWaiters&) = delete;
  P2pWaiters& operator=(const P2pWaiters&) = delete;

  // Runs `job` on a waiter thread. Returns false (and runs nothing) after stop().
  bool submit(std::function<void()> job) C10D_EXCLUDES(mu_);
  void stop() C10D_EXCLUDES(mu_);

 private:
  void loop() C10D_EXCLUDES(mu_);

  const int maxThreads_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_ C10D_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ C10D_GUARDED_BY(mu_);
  int idle_ C10D_GUARDED_BY(mu_) = 0;
  bool stopping_ C10D_GUARDED_BY(mu_) = false;
};

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
