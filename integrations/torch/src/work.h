// A torch Work (c10d::Work of libtorch) over one of our c10d_work_t.
//
// Contract: wait(timeout) blocks until the op completes (timeout 0 = torch's kNoTimeout: the op's
// own timeout, which the engine enforces, so it never blocks forever) and throws c10::Error, a
// Python RuntimeError, with the op's context ("c10d_torch: allreduce on rank 1 of c10d:world
// (size 2)") and libc10d's message. getFuture() returns a Future of a list of tensors (the op's
// outputs; what DDP's comm hooks read), completed from libc10d's completion callback; on failure
// it carries the same error. Outputs staged through a contiguous buffer (staging.h) are copied
// back before the Future completes; the Work counts as completed (isCompleted, wait) only then.
// isCompleted/isSuccess/exception never block.
//
// Threads: the completion callback runs on an engine thread; it marks the Future complete (which
// runs the Future's then() callbacks there) and takes no GIL itself. Every method may be called
// from any thread.
//
// Memory: the work and the pending completion each hold references to every tensor the op reads
// or writes, so the memory stays valid until the op completes even if Python drops the Work.
#ifndef C10D_INTEGRATIONS_TORCH_WORK_H_
#define C10D_INTEGRATIONS_TORCH_WORK_H_

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "capi.h"
#include "staging.h"

namespace c10d_torch {

// The message of a failed op: "<context>: <libc10d's message>", a timeout's as
// "<context>: Timed out (<libc10d's message>)": torch's own backends say "Timed out", and torch's
// tests and users' code look for those words.
std::string failureText(const std::string& context, c10d_status_t status, const char* message);

// A Work whose state is its Future (of the op's output tensors): complete when the Future is,
// failed with the Future's error.
class FutureWork : public ::c10d::Work {
 public:
  FutureWork(int rank, ::c10d::OpType opType);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 protected:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class WorkC10d : public FutureWork {
 public:
  // Takes ownership of `work` (released in the destructor). `outputs`: the Future's value and
  // result(); `inputs`: kept alive until completion; `staging`: the op's buffers, kept until
  // completion and copied back into `outputs` on success. `context` prefixes every error message.
  WorkC10d(c10d_work_t* work, int rank, ::c10d::OpType opType, std::string context,
           std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs, Staging staging);
  ~WorkC10d() override;

  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;

 private:
  c10d_work_t* work_;
  const std::string context_;
  std::vector<at::Tensor> outputs_;
};

// One Work over several (the ops of a coalescing block, a coalesced op run as one op per tensor):
// completes when all of them have, fails with the first failure (in issue order), and its
// Future's value / result() is every part's outputs in order, then `extraOutputs`. With no parts
// it is complete at once (an op that ran to completion on the calling thread).
class CompositeWork : public FutureWork {
 public:
  CompositeWork(int rank, ::c10d::OpType opType,
                std::vector<c10::intrusive_ptr<::c10d::Work>> parts,
                std::vector<at::Tensor> extraOutputs = {});

  std::vector<at::Tensor> result() override;
  void synchronize() override {}
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;

 private:
  std::vector<c10::intrusive_ptr<::c10d::Work>> parts_;
  std::vector<at::Tensor> outputs_;
};

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_WORK_H_
