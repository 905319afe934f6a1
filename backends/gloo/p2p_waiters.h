// P2pWaiters: the threads ("c10d-gloo-p2p") that wait for posted sends/recvs of one gloo group to
// complete. A thread is started when a job arrives and none is idle, up to `maxThreads`; past that,
// jobs queue. Threads live until stop(), which runs the jobs already queued (the group aborts their
// waits first, so they return at once) and joins every thread. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace c10d {
namespace glooimpl {

class P2pWaiters {
 public:
  explicit P2pWaiters(int maxThreads) : maxThreads_(maxThreads) {}
  ~P2pWaiters() { stop(); }
  P2pWaiters(const P2pWaiters&) = delete;
  P2pWaiters& operator=(const P2pWaiters&) = delete;

  // Runs `job` on a waiter thread. Returns false (and runs nothing) after stop().
  bool submit(std::function<void()> job);
  void stop();

 private:
  void loop();

  const int maxThreads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  std::vector<std::thread> threads_;        // guarded by mu_
  int idle_ = 0;                            // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
};

}  // namespace glooimpl
}  // namespace c10d
