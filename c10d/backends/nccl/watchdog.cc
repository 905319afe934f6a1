// The watchdog of a ProcessGroupNccl: one thread per group ("c10d-nccl-wd") that completes Works
// when their events fire and turns a stuck op, an NCCL async error or a CUDA error into an abort
// of the group's communicators plus an error on every pending Work.
//
// Polling: while Works complete it polls every 200 us; each poll that completes nothing doubles
// the sleep up to watchdog_poll_us. Once nothing has been pending for kLinger it sleeps until an
// op is issued (or 100 ms, to keep checking ncclCommGetAsyncError). Async errors are checked at
// most every millisecond.
#include <pthread.h>

#include <algorithm>
#include <cstdio>

#include "c10d/backends/nccl/comm.h"
#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/device_state.h"
#include "c10d/backends/nccl/pending_works.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

// How soon the watchdog polls after it wakes for a new op and after a poll that completed ops
// (with nothing completed the sleep doubles up to watchdog_poll_us). Not faster than 200 us:
// cudaEventQuery on this thread contends with the launches on the caller's, so faster polling
// slows every small op (c10d/backends/nccl/README.md). So a Work's callbacks and isCompleted() see
// an op done up to ~200 us after its kernel ended; Work::wait() with blocking_wait polls its event
// itself, and stream waits need no host at all.
constexpr std::chrono::microseconds kFastPoll{200};
// How long the watchdog keeps polling after the last op completed before it sleeps until the next
// is issued. Ops issued back to back often complete between two polls; waking a sleeping watchdog
// costs the issuing thread a futex wake per op (a large share of a small op's host time), so
// while ops keep coming it stays awake.
constexpr std::chrono::milliseconds kLinger{20};
constexpr std::chrono::milliseconds kIdleWait{100};
constexpr std::chrono::milliseconds kAsyncCheckEvery{1};

}  // namespace

void ProcessGroupNccl::startWatchdog() {
  watchdog_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "c10d-nccl-wd");
    watchdogLoop();
  });
}

void ProcessGroupNccl::stopWatchdog() {
  {
    MutexLock lock(wdMu_);
    wdStop_ = true;
  }
  wdCv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void ProcessGroupNccl::notifyWatchdog() {
  if (!wdIdle_.load()) return;
  MutexLock lock(wdMu_);
  wdCv_.notify_all();
}

void ProcessGroupNccl::watchdogLoop() {
  const auto maxPoll = std::chrono::microseconds(config_.watchdogPollUs);
  auto interval = maxPoll;
  auto lastAsyncCheck = Clock::now();
  auto lastBusy = lastAsyncCheck;  // when an op was last seen pending
  for (;;) {
    {
      MutexLock lock(wdMu_);
      if (wdStop_) return;
      if (pending_->empty() && Clock::now() - lastBusy >= kLinger) {
        wdIdle_.store(true);
        lock.waitFor(wdCv_, kIdleWait,
                     [this]() C10D_REQUIRES(wdMu_) { return wdStop_ || !pending_->empty(); });
        wdIdle_.store(false);
        interval = std::min<std::chrono::microseconds>(kFastPoll, maxPoll);
      } else {
        lock.waitFor(wdCv_, interval, [this]() C10D_REQUIRES(wdMu_) { return wdStop_; });
      }
      if (wdStop_) return;
    }
    try {
      const auto now = Clock::now();
      if (!pending_->empty()) lastBusy = now;
      PendingWorks::PollResult r = pending_->poll(now);
      interval = r.completed > 0 ? std::min<std::chrono::microseconds>(kFastPoll, maxPoll)
                                 : std::min<std::chrono::microseconds>(interval * 2, maxPoll);
      if (r.failure) {
        abortAll(r.failure, detail::str("a CUDA error on ", r.failureWhere, ": ",
                                        detail::messageOf(r.failure)));
        continue;
      }
      if (r.expired) {
        const std::string msg =
            detail::str(r.expired->describe(), " on ", r.expiredWhere, " (rank ", rank(), " of ",
                        size(), ") ran past its timeout of ", r.expired->timeout().count(),
                        " ms: the watchdog aborted the NCCL communicator(s) of group ", name(),
                        " (a rank that never joined the op, or a hung peer)");
        // First failure: the desync report (who is behind) joins the message.
        auto cause = diagnoseFailure(std::make_exception_ptr(TimeoutError(msg)));
        r.expired->finish(cause);
        abortAll(cause, detail::str(r.expired->describe(), " on ", r.expiredWhere, " timed out"));
        continue;
      }
      if (now - lastAsyncCheck >= kAsyncCheckEvery) {
        lastAsyncCheck = now;
        if (std::exception_ptr e = checkAsyncErrors()) {
          abortAll(e, detail::messageOf(e));
        }
      }
    } catch (const std::exception& e) {
      // Never let the watchdog die silently: fail everything with what went wrong.
      abortAll(std::current_exception(), detail::str("the watchdog failed: ", e.what()));
    }
  }
}

std::exception_ptr ProcessGroupNccl::checkAsyncErrors() {
  std::vector<std::shared_ptr<DeviceState>> devices;
  {
    MutexLock lock(devicesMu_);
    for (auto& kv : devices_) devices.push_back(kv.second);
  }
  for (auto& ds : devices) {
    MutexLock lock(ds->mu);
    if (ds->comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    ncclResult_t res = ncclCommGetAsyncError(ds->comm, &state);
    if (res != ncclSuccess) state = res;
    if (state == ncclSuccess || state == ncclInProgress) continue;
    const std::string msg =
        detail::str("nccl: asynchronous NCCL error on cuda:", ds->device, " in group ", name(),
                    " (rank ", rank(), " of ", size(), "): ", ncclErrorText(state, ds->comm));
    if (state == ncclRemoteError || state == ncclSystemError) {
      return std::make_exception_ptr(CommError(msg));
    }
    return std::make_exception_ptr(Error(msg));
  }
  return nullptr;
}

void ProcessGroupNccl::abortAll(std::exception_ptr cause, const std::string& why) noexcept {
  try {
    const bool first = !aborted_.exchange(true);
    if (first) setBroken(cause);
    std::vector<std::shared_ptr<DeviceState>> devices;
    {
      MutexLock lock(devicesMu_);
      for (auto& kv : devices_) devices.push_back(kv.second);
    }
    // Mark first, so that an event firing because of the abort is not taken for success.
    for (auto& ds : devices) ds->shared->fail(cause);
    pending_->failAll([&](const Work& w, const std::string& where) {
      return detail::withMessage(
          cause, detail::str(w.describe(), " on ", where, " (rank ", rank(), " of ", size(),
                             ") failed: the communicator was aborted because ", why));
    });
    for (auto& ds : devices) {
      MutexLock lock(ds->mu);
      if (ds->comm == nullptr) continue;
      int previous = -1;
      cudaGetDevice(&previous);
      cudaSetDevice(ds->device);
      const std::string err = abortComm(ds->comm);
      ds->comm = nullptr;
      if (previous >= 0 && previous != ds->device) cudaSetDevice(previous);
      if (!err.empty()) {
        std::fprintf(stderr, "c10d nccl: group %s cuda:%d: %s\n", name().c_str(), ds->device,
                     err.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d nccl: aborting a group failed: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "c10d nccl: aborting a group failed\n");
  }
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
