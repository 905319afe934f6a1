// P2pWork: the Work of a posted gloo send or recv. It owns the gloo buffer (which keeps gloo's
// transport context alive) so a waiter thread can wait on it; abort() and cancel() wake that
// waiter. Note: aborting a posted recv stops the wait, but Gloo 0.5 cannot withdraw the posted
// recv itself; the tensor must stay alive until the group is destroyed.
#pragma once

#include <memory>
#include <string>

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {

class P2pWork : public BackendWork {
 public:
  // Gloo cannot post a 0-byte recv (and a recv from any source must still learn its source), so
  // an empty tensor travels as one dummy byte owned by the Work.
  P2pWork(OpType op, uint64_t seq, std::string group, Milliseconds timeout,
          ::gloo::Context& context, void* data, size_t bytes, bool isRecv)
      : BackendWork(op, seq, std::move(group), timeout),
        buf_(bytes > 0 ? context.createUnboundBuffer(data, bytes)
                       : context.createUnboundBuffer(&dummy_, 1)),
        isRecv_(isRecv) {}

  ::gloo::transport::UnboundBuffer& buffer() { return *buf_; }
  bool isRecv() const { return isRecv_; }

  // Fails the Work with Error "<op>: <why>" and wakes its waiter.
  void cancel(const std::string& why) {
    finish(std::make_exception_ptr(Error(describe() + ": " + why)));
    abortWait();
  }

 protected:
  // Fails the Work before waking its waiter, as cancel() does: the woken waiter's thread reports
  // success for a finished continuation, and must not win the race with abort()'s own "aborted".
  void onAbort() override {
    finish(std::make_exception_ptr(Error(describe() + " aborted")));
    abortWait();
  }

 private:
  void abortWait() {
    if (isRecv_) {
      buf_->abortWaitRecv();
    } else {
      buf_->abortWaitSend();
    }
  }

  uint64_t dummy_ = 0;
  const std::unique_ptr<::gloo::transport::UnboundBuffer> buf_;
  const bool isRecv_;
};

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
