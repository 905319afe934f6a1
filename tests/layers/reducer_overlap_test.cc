// Overlap, tested so that a backend without it fails. Two things must hold: the markReady() that
// launches the first bucket returns before that bucket's allreduce completes (the collective is
// issued, not run), and the allreduce completes while "backward" still computes, before
// finalize() begins (it progresses on its own). To make the first deterministic, the last rank
// contributes the first bucket only after every other rank's markReady() has returned: until
// then no rank's allreduce can complete, so one found complete at that return ran inside the
// issuing call. Two controls show that the test tells the cases apart: DeferredGroup makes no
// progress until wait() (a backend without a progress thread) and must see nothing complete
// before finalize(); SynchronousGroup runs each allreduce to completion inside allreduce() and
// must be seen complete when markReady() returns.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/forwarding_group.h"
#include "c10d/store/file_store.h"
#include "tests/common/multiproc.h"
#include "tests/layers/reducer_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using ddp::IterationStats;
using ddp::Reducer;
using ddp::ReducerOptions;

// Forwards every op to `inner`, but an allreduce only starts inside its Work's wait().
class DeferredGroup : public ForwardingGroup {
 public:
  explicit DeferredGroup(std::shared_ptr<ProcessGroup> inner)
      : ForwardingGroup(std::move(inner), "/deferred") {}

 protected:
  class DeferredWork : public Work {
   public:
    explicit DeferredWork(Issue issue) : issue_(std::move(issue)) {}
    bool wait(Milliseconds timeout) override {
      if (issue_) {
        Issue issue = std::move(issue_);
        issue_ = nullptr;  // wait() runs on the Reducer's thread only
        try {
          issue()->wait(timeout);
          finish();
        } catch (...) {
          finish(std::current_exception());
        }
      }
      return Work::wait(timeout);
    }

   private:
    Issue issue_;
  };

  std::shared_ptr<Work> forward(OpType op, Issue issue) override {
    if (op != OpType::kAllreduce) return issue();
    return std::make_shared<DeferredWork>(std::move(issue));
  }
};

// Forwards every op to `inner`, but an allreduce runs to completion inside the call that issues
// it (its Work is waited before it is returned), as a backend without asynchronous ops would.
class SynchronousGroup : public ForwardingGroup {
 public:
  explicit SynchronousGroup(std::shared_ptr<ProcessGroup> inner)
      : ForwardingGroup(std::move(inner), "/synchronous") {}

 protected:
  std::shared_ptr<Work> forward(OpType op, Issue issue) override {
    std::shared_ptr<Work> work = issue();
    if (op == OpType::kAllreduce) work->wait();
    return work;
  }
};

// Forwards every op to `inner` and notes, for each allreduce issued through it, whether its Work
// has completed (a callback sets the flag on the completing thread, or at once if the Work came
// back complete).
class AllreduceWatch : public ForwardingGroup {
 public:
  explicit AllreduceWatch(std::shared_ptr<ProcessGroup> inner)
      : ForwardingGroup(std::move(inner), "/watched") {}

  size_t issued() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_.size();
  }
  bool completed(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return i < done_.size() && done_[i]->load();
  }

 protected:
  std::shared_ptr<Work> forward(OpType op, Issue issue) override {
    std::shared_ptr<Work> work = issue();
    if (op == OpType::kAllreduce) {
      auto done = std::make_shared<std::atomic<bool>>(false);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_.push_back(done);
      }
      work->then([done](Work&) { done->store(true); });
    }
    return work;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<std::atomic<bool>>> done_;
};

// "Compute" after the first bucket's gradients are ready: far longer than a small allreduce takes
// even on a loaded machine, so a backend that progresses on its own finishes the bucket meanwhile.
constexpr auto kCompute = std::chrono::milliseconds(300);

// How long the last rank waits for the others' markReady() of the first bucket to return: far
// longer than an issue takes on a loaded machine (reaching it fails the test), except for the
// synchronous control, whose markReady() cannot return before the last rank contributes.
constexpr auto kGate = std::chrono::milliseconds(10000);
constexpr auto kSynchronousGate = std::chrono::milliseconds(200);

// What one iteration of runBackward saw.
struct Iteration {
  IterationStats stats;
  // Not the last rank: the first bucket's allreduce had completed when the markReady() that
  // launched it returned.
  bool firstBucketDoneAtIssue = false;
  // The last rank: the others' markReady() had not returned within the gate.
  bool gateTimedOut = false;
};

// Two iterations of backward over a model of several buckets; the first bucket's parameters are
// marked (on the last rank once every other rank's markReady() of them returned, or the gate
// passed), then kCompute passes, then the rest. `signalPath`: a FileStore path for the gate.
std::vector<Iteration> runBackward(std::shared_ptr<ProcessGroup> pg, int rank, int size,
                                   const std::string& signalPath,
                                   std::chrono::milliseconds gate = kGate) {
  auto watch = std::make_shared<AllreduceWatch>(std::move(pg));
  FileStore signals(signalPath, size);
  const int last = size - 1;
  TestModel m(mixedSpecs(8));
  ReducerOptions opts;
  opts.firstBucketBytes = 64;
  opts.bucketCapBytes = 512;
  Reducer red(m.parameters(), watch, opts);
  std::vector<Iteration> out;
  for (int iter = 0; iter < 2; ++iter) {
    const auto layout = red.buckets();
    EXPECT_GE(layout.size(), 3u) << "the test needs several buckets";
    const std::string key = "iteration" + std::to_string(iter) + "/rank";
    Iteration it;
    if (rank == last) {
      std::vector<std::string> keys;
      for (int r = 0; r < last; ++r) keys.push_back(key + std::to_string(r));
      try {
        signals.wait(keys, gate);
      } catch (const TimeoutError&) {
        it.gateTimedOut = true;
      }
    }
    const size_t before = watch->issued();
    for (size_t p : layout[0].parameters) produceGrad(red, m, rank, p, iter);
    if (rank != last) {
      EXPECT_EQ(watch->issued(), before + 1)
          << "the last markReady() of the first bucket did not launch its allreduce";
      it.firstBucketDoneAtIssue = watch->completed(before);
      signals.set(key + std::to_string(rank), "returned");
    }
    std::this_thread::sleep_for(kCompute);
    for (size_t b = 1; b < layout.size(); ++b) {
      for (size_t p : layout[b].parameters) produceGrad(red, m, rank, p, iter);
    }
    it.stats = red.finalize();
    for (size_t p = 0; p < m.size(); ++p) {
      expectTensor(
          gradOf(red, m, p), [&](size_t e) { return meanGrad(size, p, e, iter); }, 1e-6,
          "iteration " + std::to_string(iter) + ", " + m.spec(p).name);
    }
    out.push_back(it);
  }
  return out;
}

// runBackward in forked ranks over the case's backend wrapped by `wrap`; `check` on each iteration.
using Wrap = std::function<std::shared_ptr<ProcessGroup>(std::shared_ptr<ProcessGroup>)>;
using Check = std::function<void(const Iteration&, int rank, int size)>;
void checkEachIteration(const BackendParam& bp, int worldSize, const std::string& tag,
                        const Wrap& wrap, std::chrono::milliseconds gate, const Check& check) {
  const std::string path = uniqueTempPath(tag);
  const std::string signals = uniqueTempPath(tag + "-signals");
  expectAllRanksOk(worldSize, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (const Iteration& it : runBackward(wrap(pg), rank, size, signals, gate)) {
      check(it, rank, size);
    }
    pg->barrier()->wait();
  });
}

class ReducerOverlap : public ReducerTest {};

TEST_P(ReducerOverlap, FirstBucketCompletesDuringBackward) {
  checkEachIteration(
      p(), ws(), "ddp-overlap", [](std::shared_ptr<ProcessGroup> pg) { return pg; }, kGate,
      [](const Iteration& it, int rank, int size) {
        EXPECT_FALSE(it.firstBucketDoneAtIssue)
            << "rank " << rank << ": the first bucket's allreduce had completed when the "
            << "markReady() that launched it returned, before rank " << size - 1
            << " contributed: the collective ran inside allreduce(), not beside backward";
        EXPECT_FALSE(it.gateTimedOut)
            << "rank " << rank << ": the other ranks' markReady() of the first bucket did not "
            << "return within " << kGate.count() << " ms: markReady() waits for communication";
        EXPECT_GE(it.stats.bucketsDoneBeforeFinalize, 1u)
            << "the first bucket's allreduce did not complete during " << kCompute.count()
            << " ms of compute: communication is not overlapped with backward";
        EXPECT_GT(it.stats.overlappedSeconds, 0.0);
      });
}

// The controls: the same run over a backend that progresses only in wait() is caught, and so is
// one that runs each allreduce inside the call that issues it.
TEST_P(ReducerOverlap, ABackendThatProgressesOnlyInWaitIsCaught) {
  checkEachIteration(
      p(), ws(), "ddp-deferred",
      [](std::shared_ptr<ProcessGroup> pg) { return std::make_shared<DeferredGroup>(pg); }, kGate,
      [](const Iteration& it, int, int) {
        EXPECT_EQ(it.stats.bucketsDoneBeforeFinalize, 0u) << "a deferred allreduce completed early";
        EXPECT_GE(it.stats.finalizeWaitSeconds, 0.0);
      });
}

TEST_P(ReducerOverlap, ABackendThatRunsEachAllreduceInsideTheIssueIsCaught) {
  checkEachIteration(
      p(), ws(), "ddp-synchronous",
      [](std::shared_ptr<ProcessGroup> pg) { return std::make_shared<SynchronousGroup>(pg); },
      kSynchronousGate,
      [](const Iteration& it, int rank, int size) {
        if (rank == size - 1) {
          EXPECT_TRUE(it.gateTimedOut) << "a synchronous markReady() returned before its allreduce";
        } else {
          EXPECT_TRUE(it.firstBucketDoneAtIssue)
              << "rank " << rank << ": a synchronous allreduce was not complete when its issue "
              << "returned";
        }
        // What the completion-before-finalize criterion alone cannot see: the bucket is done early.
        EXPECT_GE(it.stats.bucketsDoneBeforeFinalize, 1u);
      });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReducerOverlap, ::testing::ValuesIn(conformanceCases({2, 3})),
                         caseName);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
