// Overlap, tested so that a backend without it fails: the first bucket's allreduce must complete
// while "backward" still computes, before finalize() begins. DeferredGroup is such a backend (it
// makes no progress until wait(), as a backend without a progress thread would): the same test
// over it must see nothing complete before finalize(), or the test could not tell the two apart.
#include <chrono>
#include <thread>

#include "core/forwarding_group.h"
#include "tests/common/multiproc.h"
#include "tests/layers/reducer_fixture.h"

namespace c10d {
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

// "Compute" after the first bucket's gradients are ready: far longer than a small allreduce takes
// even on a loaded machine, so a backend that progresses on its own finishes the bucket meanwhile.
constexpr auto kCompute = std::chrono::milliseconds(300);

// Two iterations of backward over a model of several buckets; the first bucket's parameters are
// marked, then kCompute passes, then the rest. Returns each iteration's stats.
std::vector<IterationStats> runBackward(std::shared_ptr<ProcessGroup> pg, int rank, int size) {
  TestModel m(mixedSpecs(8));
  ReducerOptions opts;
  opts.firstBucketBytes = 64;
  opts.bucketCapBytes = 512;
  Reducer red(m.parameters(), pg, opts);
  const auto layout = red.buckets();
  EXPECT_GE(layout.size(), 3u) << "the test needs several buckets";
  std::vector<IterationStats> stats;
  for (int iter = 0; iter < 2; ++iter) {
    for (size_t p : layout[0].parameters) produceGrad(red, m, rank, p, iter);
    std::this_thread::sleep_for(kCompute);
    for (size_t b = 1; b < layout.size(); ++b) {
      for (size_t p : layout[b].parameters) produceGrad(red, m, rank, p, iter);
    }
    stats.push_back(red.finalize());
    for (size_t p = 0; p < m.size(); ++p) {
      expectTensor(
          gradOf(red, m, p), [&](size_t e) { return meanGrad(size, p, e, iter); }, 1e-6,
          "iteration " + std::to_string(iter) + ", " + m.spec(p).name);
    }
  }
  return stats;
}

class ReducerOverlap : public ReducerTest {};

TEST_P(ReducerOverlap, FirstBucketCompletesDuringBackward) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-overlap");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (const IterationStats& st : runBackward(pg, rank, size)) {
      EXPECT_GE(st.bucketsDoneBeforeFinalize, 1u)
          << "the first bucket's allreduce did not complete during " << kCompute.count()
          << " ms of compute: communication is not overlapped with backward";
      EXPECT_GT(st.overlappedSeconds, 0.0);
    }
    pg->barrier()->wait();
  });
}

// The control: the same run over a backend that progresses only in wait() is caught.
TEST_P(ReducerOverlap, ABackendThatProgressesOnlyInWaitIsCaught) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-deferred");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (const IterationStats& st : runBackward(std::make_shared<DeferredGroup>(pg), rank, size)) {
      EXPECT_EQ(st.bucketsDoneBeforeFinalize, 0u) << "a deferred allreduce completed early";
      EXPECT_GE(st.finalizeWaitSeconds, 0.0);
    }
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReducerOverlap, ::testing::ValuesIn(conformanceCases({2, 3})),
                         caseName);

}  // namespace
}  // namespace test
}  // namespace c10d
