// Per-device resources of a ProcessGroupNccl. Private to the backend (CUDA and NCCL types).
//
//   DeviceShared     shared by the group and its Works (a Work may outlive its group): the device
//                    ordinal, a pool of completion events, and the "failed" flag the watchdog sets
//                    before it aborts the communicator (so that an event firing after an abort is
//                    not taken for success).
//   CompletionEvent  one recorded completion event, shared by the Works it completes (one op, or
//                    every op of a coalesced block); returns the event to the pool when released.
//   DeviceState      owned by the group: the communicator (guarded by `mu`), the op stream, the
//                    event that orders the op stream after the caller's stream, and a scratch
//                    element for barrier(). Its destructor aborts a communicator still alive.
//   DeviceGuard      makes a device current for a scope and restores the previous one.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A free event (cudaEventDisableTiming), created on demand on the pool's device.
  cudaEvent_t get() C10D_EXCLUDES(mu_);
  void put(cudaEvent_t event) noexcept C10D_EXCLUDES(mu_);

 private:
  const int device_;
  Mutex mu_;
  std::vector<cudaEvent_t> free_ C10D_GUARDED_BY(mu_);
};

struct DeviceShared {
  explicit DeviceShared(int d) : device(d), where("cuda:" + std::to_string(d)), events(d) {}
  const int device;
  const std::string where;  // "cuda:0", for messages (made once: ops name it on every launch)
  EventPool events;
  std::atomic<bool> failed{false};

  void fail(std::exception_ptr e) C10D_EXCLUDES(mu_);
  std::exception_ptr error() const C10D_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::exception_ptr error_ C10D_GUARDED_BY(mu_);
};

class CompletionEvent {
 public:
  CompletionEvent(std::shared_ptr<DeviceShared> dev, cudaEvent_t event)
      : dev_(std::move(dev)), event_(event) {}
  ~CompletionEvent() { dev_->events.put(event_); }
  CompletionEvent(const CompletionEvent&) = delete;
  CompletionEvent& operator=(const CompletionEvent&) = delete;

  cudaEvent_t get() const { return event_; }
  const std::shared_ptr<DeviceShared>& device() const { return dev_; }

 private:
  const std::shared_ptr<DeviceShared> dev_;
  const cudaEvent_t event_;
};

struct DeviceState {
  DeviceState(int device, bool highPriorityStream);
  ~DeviceState();
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  // Sets the communicator of a state no other thread can reach yet (made by the caller and not
  // yet published), so without taking mu.
  void setUnsharedComm(ncclComm_t c) C10D_NO_THREAD_SAFETY_ANALYSIS { comm = c; }

  const int device;
  const std::shared_ptr<DeviceShared> shared;
  Mutex mu;
  ncclComm_t comm C10D_GUARDED_BY(mu) = nullptr;  // null until created, and after an abort
  cudaStream_t stream = nullptr;                  // the group's op stream on this device
  // Recorded on the caller's stream before each op.
  cudaEvent_t syncEvent C10D_GUARDED_BY(mu) = nullptr;
  void* scratch = nullptr;       // 16 bytes of device memory (barrier)
  void* fingerprints = nullptr;  // C10D_DEBUG=DETAIL: (size + 1) OpDesc::Wires, made on use
};

class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_;
};

// Number of CUDA devices; 0 with `why` filled in ("no CUDA device: ...") when there are none or
// the driver is missing. Never throws.
int cudaDeviceCount(std::string* why);

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
