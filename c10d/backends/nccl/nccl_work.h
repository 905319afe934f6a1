// NcclWork: the Work of one nccl op (or of a coalesced block), completed by a CUDA event recorded
// on the group's op stream right after the op.
//
// Completion: whoever sees the event fire first finishes the Work: the group's watchdog thread
// (it polls every pending Work's event), or a thread blocked in wait(). If the watchdog aborted the
// communicator (timeout, NCCL async error), the Work fails with that error even when its event
// fires afterwards.
//
// wait(timeout)
//   blocking_wait = 1 (default): blocks the host until the event fires (polling cudaEventQuery:
//   spinning briefly, then sleeping up to 1 ms), the Work fails (rethrows its error: TimeoutError
//   or CommError from the watchdog, naming op, sequence number, group and device), or `timeout`
//   passes (TimeoutError; the op stays pending and the watchdog fails it at its own deadline).
//   blocking_wait = 0: does not block the host; it makes the caller's current stream wait for the
//   op (like synchronize()) and returns, rethrowing only an error the Work already has. Later
//   errors reach the Work through the watchdog (check isSuccess()/exception()).
// synchronize(): the caller's current stream (cuda_stream.h) waits for the op's event; returns at
//   once. On a Work that already failed it rethrows the error instead (its event may never fire).
// abort(): fails this Work only; NCCL cannot cancel one op, which keeps running on the stream
//   (abort the group with shutdown() to stop it).
//
// Memory: the Work keeps the op's Tensor views until it is destroyed, but views do not own
// memory: the caller keeps the buffers alive, and does not reuse them, until the Work completed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/nccl/device_state.h"
#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

class NcclWork : public BackendWork {
 public:
  NcclWork(OpType op, uint64_t seq, std::string group, Milliseconds timeout,
           std::shared_ptr<DeviceShared> device, std::vector<Tensor> tensors, bool blockingWait);

  // Sets the completion event (once, before the Work is handed to the watchdog).
  void setEvent(std::shared_ptr<CompletionEvent> event) C10D_EXCLUDES(eventMu_);
  // Whether the completion event has fired. False while no event is set. Throws the device's
  // failure when the communicator was aborted, and Error on a CUDA error.
  bool eventFired();

  bool wait(Milliseconds timeout = kUnsetTimeout) override;
  void synchronize() override;

  // "cuda:<device>"
  const std::string& where() const;

 private:
  std::shared_ptr<CompletionEvent> event() const C10D_EXCLUDES(eventMu_);

  const std::shared_ptr<DeviceShared> device_;
  const std::vector<Tensor> tensors_;  // views, kept for the record (see header comment)
  const bool blockingWait_;
  mutable Mutex eventMu_;
  std::shared_ptr<CompletionEvent> event_ C10D_GUARDED_BY(eventMu_);
};

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
