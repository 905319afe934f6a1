#include "c10d/backends/nccl/nccl_work.h"

#include <chrono>
#include <thread>

#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/cuda_stream.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

// A year: "forever" that keeps deadline arithmetic in range (as Work::wait does).
constexpr Milliseconds kMaxWait{365LL * 24 * 3600 * 1000};
// wait() spins (yielding) this long before it starts sleeping between polls.
constexpr std::chrono::microseconds kSpin{2000};

}  // namespace

NcclWork::NcclWork(OpType op, uint64_t seq, std::string group, Milliseconds timeout,
                   std::shared_ptr<DeviceShared> device, std::vector<Tensor> tensors,
                   bool blockingWait)
    : BackendWork(op, seq, std::move(group), timeout),
      device_(std::move(device)),
      tensors_(std::move(tensors)),
      blockingWait_(blockingWait) {}

void NcclWork::setEvent(std::shared_ptr<CompletionEvent> event) {
  MutexLock lock(eventMu_);
  event_ = std::move(event);
}

std::shared_ptr<CompletionEvent> NcclWork::event() const {
  MutexLock lock(eventMu_);
  return event_;
}

const std::string& NcclWork::where() const {
  return device_->where;
}

bool NcclWork::eventFired() {
  auto ev = event();
  if (!ev) return false;
  const cudaError_t err = cudaEventQuery(ev->get());
  if (err == cudaErrorNotReady) return false;
  if (err != cudaSuccess) {
    cudaGetLastError();
    throwCudaError(err, "cudaEventQuery", describe() + " on " + where(), __FILE__, __LINE__);
  }
  if (device_->failed.load()) {
    std::exception_ptr e = device_->error();
    if (e) std::rethrow_exception(e);
    C10D_THROW(Error, describe(), " on ", where(), ": the communicator was aborted");
  }
  return true;
}

bool NcclWork::wait(Milliseconds timeout) {
  Milliseconds t = timeout == kUnsetTimeout ? this->timeout() : timeout;
  if (t < Milliseconds::zero()) t = Milliseconds::zero();
  if (t > kMaxWait) t = kMaxWait;
  if (!blockingWait_) {
    if (isCompleted()) {
      if (std::exception_ptr e = exception()) std::rethrow_exception(e);
      return true;
    }
    synchronize();
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + t;
  auto sleep = std::chrono::microseconds(5);
  for (;;) {
    if (isCompleted()) {
      if (std::exception_ptr e = exception()) std::rethrow_exception(e);
      return true;
    }
    try {
      if (eventFired()) {
        finish();
        continue;
      }
    } catch (...) {
      finish(std::current_exception());
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      C10D_THROW(TimeoutError, describe(), " on ", where(), " did not complete within ", t.count(),
                 " ms (Work::wait timed out; the op is still pending: the group's watchdog fails "
                 "it and aborts the communicator once its own timeout of ",
                 this->timeout().count(), " ms has passed)");
    }
    if (now - start < kSpin) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      if (sleep < std::chrono::milliseconds(1)) sleep *= 2;
    }
  }
}

void NcclWork::synchronize() {
  if (isCompleted()) {
    if (std::exception_ptr e = exception()) std::rethrow_exception(e);
  }
  auto ev = event();
  if (!ev) return;  // nothing was launched (no event yet, or an op with no data)
  const int dev = device_->device;
  DeviceGuard guard(dev);
  C10D_CUDA_CHECK(cudaStreamWaitEvent(currentStream(dev), ev->get(), 0), describe(), " on ",
                  where());
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
