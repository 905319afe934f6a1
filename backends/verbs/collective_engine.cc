#include "backends/verbs/collective_engine.h"

#include <pthread.h>

#include "c10d/error.h"

namespace c10d {
namespace verbs {

void Handoff::handOff() {
  Fiber* f = fiber_;
  if (f == nullptr) return;
  fiber_ = nullptr;
  f->suspend();
}

namespace {
std::exception_ptr shutDownError(const Work& w);
}  // namespace

CollectiveEngine::CollectiveEngine(std::string group, size_t inlineBytes, int inlineUs)
    : group_(std::move(group)), inlineBytes_(inlineBytes), inlineUs_(inlineUs) {
  thread_ = std::thread([this, alive = alive_] {
    pthread_setname_np(pthread_self(), "c10d-verbs-coll");
    loop(alive);
  });
}

CollectiveEngine::~CollectiveEngine() {
  stop();
  alive_->store(false);
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();  // destroyed from one of its own callbacks
    else
      thread_.join();
  }
}

void CollectiveEngine::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  // Once joined (or when called from the thread itself, which leaves after this op), nothing pops
  // the queue any more: what is still there never ran.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  std::deque<Task> left;
  {
    std::lock_guard<std::mutex> g(mu_);
    left.swap(queue_);
  }
  for (auto& t : left) t.work->finish(shutDownError(*t.work));
}

namespace {

std::exception_ptr shutDownError(const Work& w) {
  return std::make_exception_ptr(Error(w.describe() + ": the group was shut down"));
}

// Runs a body; an exception escaping it (it should return its error) is its error.
std::exception_ptr runBody(const CollectiveEngine::Body& body, Handoff* h) {
  try {
    return body(h);
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

void CollectiveEngine::submit(std::shared_ptr<Work> work, size_t bytes, Body body) {
  bool runInline = false, stopped = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopped = stop_.load();
    if (!stopped) {
      runInline = !busy_ && bytes <= inlineBytes_ && inlineBytes_ > 0 &&
                  std::this_thread::get_id() != thread_.get_id();
      if (!runInline) queue_.push_back(Task{work, std::move(body)});
      inlineRunning_ = runInline;
      busy_ = true;
    }
  }
  if (stopped) {
    work->finish(shutDownError(*work));
    return;
  }
  if (!runInline) {
    cv_.notify_one();
    return;
  }
  inline_ = Task{std::move(work), std::move(body)};
  inlineError_ = nullptr;
  handoff_.fiber_ = &fiber_;
  handoff_.until_ = Clock::now() + std::chrono::microseconds(inlineUs_);
  bool done = fiber_.start([this] { inlineError_ = runBody(inline_.body, &handoff_); });
  if (!done) {
    std::unique_lock<std::mutex> g(mu_);
    if (!stop_.load()) {
      handedOff_ = true;
      inlineRunning_ = false;
      g.unlock();
      cv_.notify_one();
      return;
    }
    g.unlock();
    // The engine is stopping and may be gone: finish the op here (it fails at its next poll).
    while (!fiber_.resume()) {
    }
  }
  finishInline();
}

void CollectiveEngine::finishInline() {
  Task t = std::move(inline_);
  inline_ = Task{};
  std::exception_ptr e = std::move(inlineError_);
  inlineError_ = nullptr;
  // Finish before releasing busy_: an op issued after this one must not complete before it.
  const std::shared_ptr<std::atomic<bool>> alive = alive_;
  t.work->finish(e);
  if (!alive->load()) return;  // a completion callback destroyed the group (and us)
  bool more;
  {
    std::lock_guard<std::mutex> g(mu_);
    inlineRunning_ = false;
    // Ops issued meanwhile (by other threads, or by a completion callback): the thread runs them.
    more = !queue_.empty();
    if (!more) busy_ = false;
  }
  if (more) cv_.notify_one();
}

void CollectiveEngine::loop(const std::shared_ptr<std::atomic<bool>>& alive) {
  for (;;) {
    Task t;
    bool resume = false;
    {
      std::unique_lock<std::mutex> g(mu_);
      // While the caller runs an op inline, queued ops wait for it (they complete after it).
      cv_.wait(g,
               [&] { return handedOff_ || stop_.load() || (!inlineRunning_ && !queue_.empty()); });
      if (handedOff_) {
        handedOff_ = false;
        resume = true;
      } else if (stop_.load()) {
        return;  // stop() fails what is still queued
      } else {
        t = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    std::exception_ptr e;
    if (resume) {
      // The rest of an op a caller started inline (it fails promptly if we are stopping).
      while (!fiber_.resume()) {
      }
      t = std::move(inline_);
      inline_ = Task{};
      e = std::move(inlineError_);
      inlineError_ = nullptr;
    } else {
      e = runBody(t.body, nullptr);  // fails at its first poll if stop() came meanwhile
    }
    t.work->finish(e);
    t = Task{};
    if (!alive->load()) return;  // a completion callback destroyed the group (and us)
    std::lock_guard<std::mutex> g(mu_);
    if (queue_.empty() && !handedOff_) busy_ = false;
  }
}

}  // namespace verbs
}  // namespace c10d
