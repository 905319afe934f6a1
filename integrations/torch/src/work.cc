#include "work.h"

#include <ATen/core/ivalue_inl.h>

#include <memory>
#include <stdexcept>

namespace c10d_torch {

std::string failureText(const std::string& context, c10d_status_t status, const char* message) {
  const std::string what = message != nullptr && *message != '\0' ? message : "failed";
  if (status == C10D_STATUS_TIMEOUT) {
    return context + ": Timed out (" + what + ")";
  }
  return context + ": " + what;
}

namespace {

// What the completion callback needs; owned by the callback (deleted when it has run).
struct Completion {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> inputs;  // kept alive only
  std::string context;
  Staging staging;
};

void onComplete(void* user, c10d_status_t status, const char* message) {
  std::unique_ptr<Completion> done(static_cast<Completion*>(user));
  try {
    if (status == C10D_STATUS_OK) {
      try {
        done->staging.copyBack();
      } catch (const std::exception& e) {
        done->future->setError(std::make_exception_ptr(std::runtime_error(
            done->context + ": copying the result into the output tensors failed: " + e.what())));
        return;
      }
      done->future->markCompleted(c10::IValue(done->outputs));
    } else {
      done->future->setError(
          std::make_exception_ptr(std::runtime_error(failureText(done->context, status, message))));
    }
  } catch (...) {
    // markCompleted/setError only throw on a second completion, which libc10d never makes.
  }
}

}  // namespace

FutureWork::FutureWork(int rank, ::c10d::OpType opType)
    : ::c10d::Work(rank, opType),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

bool FutureWork::isCompleted() {
  return future_->completed();
}

bool FutureWork::isSuccess() const {
  return future_->completed() && !future_->hasError();
}

std::exception_ptr FutureWork::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}

c10::intrusive_ptr<c10::ivalue::Future> FutureWork::getFuture() {
  return future_;
}

WorkC10d::WorkC10d(c10d_work_t* work, int rank, ::c10d::OpType opType, std::string context,
                   std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs, Staging staging)
    : FutureWork(rank, opType),
      work_(work),
      context_(std::move(context)),
      outputs_(std::move(outputs)) {
  auto done = std::make_unique<Completion>(
      Completion{future_, outputs_, std::move(inputs), context_, std::move(staging)});
  const CApi& api = capi();
  const c10d_status_t status = api.c10d_work_on_complete(work_, onComplete, done.get());
  if (status != C10D_STATUS_OK) {
    std::string why = api.c10d_last_error();
    api.c10d_work_release(work_);
    TORCH_CHECK(false, context_, ": cannot register the completion callback: ", why);
  }
  done.release();  // onComplete owns it now
}

WorkC10d::~WorkC10d() {
  capi().c10d_work_release(work_);  // does not cancel the op (the Completion keeps its tensors)
}

int WorkC10d::sourceRank() const {
  int rank = -1;
  capi().c10d_work_source_rank(work_, &rank);
  return rank;
}

std::vector<at::Tensor> WorkC10d::result() {
  return outputs_;
}

void WorkC10d::synchronize() {
  // CPU tensors: completion is all there is (wait() does it).
}

bool WorkC10d::wait(std::chrono::milliseconds timeout) {
  const CApi& api = capi();
  const int64_t ms = timeout == kNoTimeout ? C10D_TIMEOUT_DEFAULT : timeout.count();
  const c10d_status_t status = api.c10d_work_wait(work_, ms);
  if (status == C10D_STATUS_TIMEOUT && api.c10d_work_test(work_) == C10D_STATUS_PENDING) {
    TORCH_CHECK(false, context_, ": Timed out in wait() after ",
                timeout == kNoTimeout ? std::string("the op's timeout")
                                      : std::to_string(timeout.count()) + " ms",
                " (the op is still running: ", api.c10d_last_error(), ")");
  }
  TORCH_CHECK(status == C10D_STATUS_OK, failureText(context_, status, api.c10d_last_error()));
  // The op is complete; its callback (which completes the Future) runs on the engine thread right
  // after, so the Future is done or about to be: wait for it so that getFuture()->value() works
  // as soon as wait() returns (and the staged outputs have been copied back).
  future_->wait();
  TORCH_CHECK(!future_->hasError(), future_->tryRetrieveErrorMessage());
  return true;
}

void WorkC10d::abort() {
  capi().c10d_work_abort(work_);
}

CompositeWork::CompositeWork(int rank, ::c10d::OpType opType,
                             std::vector<c10::intrusive_ptr<::c10d::Work>> parts,
                             std::vector<at::Tensor> extraOutputs)
    : FutureWork(rank, opType), parts_(std::move(parts)) {
  for (const auto& part : parts_) {
    for (const at::Tensor& t : part->result()) {
      outputs_.push_back(t);
    }
  }
  for (at::Tensor& t : extraOutputs) {
    outputs_.push_back(std::move(t));
  }
  if (parts_.empty()) {
    future_->markCompleted(c10::IValue(outputs_));
    return;
  }
  // The last part to complete completes the Future, with the first part's error in issue order.
  auto pending = std::make_shared<std::atomic<size_t>>(parts_.size());
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> futures;
  for (const auto& part : parts_) {
    futures.push_back(part->getFuture());
  }
  for (const auto& f : futures) {
    f->addCallback([pending, futures, future = future_, outputs = outputs_](c10::ivalue::Future&) {
      if (pending->fetch_sub(1) != 1) {
        return;
      }
      for (const auto& part : futures) {
        if (part->hasError()) {
          future->setError(part->exception_ptr());
          return;
        }
      }
      future->markCompleted(c10::IValue(outputs));
    });
  }
}

std::vector<at::Tensor> CompositeWork::result() {
  return outputs_;
}

bool CompositeWork::wait(std::chrono::milliseconds timeout) {
  for (const auto& part : parts_) {
    part->wait(timeout);  // throws the part's error
  }
  future_->wait();
  TORCH_CHECK(!future_->hasError(), future_->tryRetrieveErrorMessage());
  return true;
}

void CompositeWork::abort() {
  for (const auto& part : parts_) {
    part->abort();
  }
}

}  // namespace c10d_torch
