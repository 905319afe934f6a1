// Reducer: averaging across ranks in many buckets (grads copied and grads as bucket views), mixed
// dtypes, the rebuild from rank 0's ready order, launch order, no-sync accumulation, unused
// parameters, comm hooks and the per-iteration stats. Every CPU backend, world sizes 1-4.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/layers/common/bucket_assignment.h"
#include "c10d/layers/common/memory.h"
#include "tests/common/multiproc.h"
#include "tests/layers/reducer_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using ddp::Reducer;
using ddp::ReducerOptions;

std::vector<layers::TensorSpec> tensorSpecs(const TestModel& m) {
  std::vector<layers::TensorSpec> out;
  for (const ParamSpec& s : m.specs()) out.push_back({s.numel, s.dtype, Device::cpu()});
  return out;
}

void expectLayout(const std::vector<ddp::BucketInfo>& got,
                  const std::vector<layers::BucketSpec>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t b = 0; b < got.size(); ++b) {
    EXPECT_EQ(got[b].parameters, want[b].members) << what << ": bucket " << b;
    EXPECT_EQ(got[b].dtype, want[b].dtype) << what << ": bucket " << b;
    EXPECT_EQ(got[b].bytes, want[b].bytes) << what << ": bucket " << b;
  }
}

// Every rank's layout, hashed and allgathered: all must agree.
void expectSameLayoutEverywhere(ProcessGroup& pg, const std::vector<ddp::BucketInfo>& layout) {
  uint64_t hash = 1469598103;
  for (size_t b = 0; b < layout.size(); ++b) {
    for (size_t p : layout[b].parameters) hash = hash * 1000003 + b * 7919 + p;
  }
  int64_t h = static_cast<int64_t>(hash >> 1);
  std::vector<int64_t> all(pg.size());
  pg.allgatherIntoTensor(tensorOf(all.data(), all.size()), tensorOf(&h, 1))->wait();
  for (int r = 0; r < pg.size(); ++r) EXPECT_EQ(all[r], h) << "rank " << r << "'s bucket layout";
}

void expectMeans(const Reducer& red, const TestModel& m, int size, int iter,
                 const std::string& what) {
  for (size_t p = 0; p < m.size(); ++p) {
    expectTensor(
        gradOf(red, m, p), [&](size_t e) { return meanGrad(size, p, e, iter); }, 1e-6,
        what + " " + m.spec(p).name);
  }
}

TEST_P(ReducerTest, AveragesAcrossRanksInManyBuckets) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-avg");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (bool view : {false, true}) {
      const std::string mode = view ? "grads as views" : "grads copied";
      TestModel m(mixedSpecs(12));
      for (size_t p = 0; p < m.size(); ++p) {
        fillTensor(m.data(p), [&](size_t e) { return rank * 1000.0 + p + e; });
      }
      ReducerOptions opts;
      opts.gradientAsBucketView = view;
      opts.firstBucketBytes = 64;
      opts.bucketCapBytes = 512;
      Reducer red(m.parameters(), pg, opts);
      // Start-up: rank 0's values everywhere.
      for (size_t p = 0; p < m.size(); ++p) {
        expectTensor(
            m.data(p), [&](size_t e) { return static_cast<double>(p + e); }, 0,
            mode + ": data after the start-up broadcast of " + m.spec(p).name);
      }
      // Layout: reverse parameter order, per dtype, first bucket small, the rest capped.
      const auto layout = red.buckets();
      expectLayout(layout,
                   layers::assignBuckets(tensorSpecs(m), layers::reverseOrder(m.size()), {64, 512}),
                   mode);
      ASSERT_GE(layout.size(), 5u) << mode << ": expected many buckets";
      EXPECT_EQ(layout[0].parameters.front(), m.size() - 1) << "the last parameter goes first";
      std::vector<int> seen(m.size(), 0);
      std::vector<int> bucketsOfDtype(kNumDataTypes, 0);
      size_t totalBytes = 0;
      for (const auto& b : layout) {
        const size_t limit = bucketsOfDtype[static_cast<int>(b.dtype)]++ == 0 ? 64 : 512;
        size_t bytes = 0;
        for (size_t k = 0; k < b.parameters.size(); ++k) {
          const size_t p = b.parameters[k];
          ++seen[p];
          EXPECT_EQ(m.spec(p).dtype, b.dtype)
              << "parameter " << p << " in a bucket of another dtype";
          if (k > 0) {
            EXPECT_LT(p, b.parameters[k - 1]) << "reverse order inside a bucket";
          }
          if (k + 1 < b.parameters.size()) bytes += m.spec(p).numel * elementSize(b.dtype);
        }
        EXPECT_LT(bytes, limit) << "a bucket went on filling past its limit";
        totalBytes += b.bytes;
      }
      for (size_t p = 0; p < m.size(); ++p) EXPECT_EQ(seen[p], 1) << "parameter " << p;
      EXPECT_EQ(bucketsOfDtype[static_cast<int>(DataType::kFloat64)] > 0, true);

      for (int iter = 0; iter < 3; ++iter) {
        for (size_t p = m.size(); p-- > 0;) produceGrad(red, m, rank, p, iter);
        if (iter == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // "compute"
        const ddp::IterationStats st = red.finalize();
        expectMeans(red, m, size, iter, mode + " iteration " + std::to_string(iter));
        EXPECT_TRUE(st.synced);
        EXPECT_EQ(st.iteration, static_cast<uint64_t>(iter + 1));
        EXPECT_FALSE(st.rebuiltBuckets) << "ready order = initial order: nothing to rebuild";
        ASSERT_EQ(st.bucketBytes.size(), layout.size());
        EXPECT_EQ(std::accumulate(st.bucketBytes.begin(), st.bucketBytes.end(), size_t{0}),
                  totalBytes);
        EXPECT_EQ(st.bucketsLaunchedEarly, layout.size()) << "all launched during backward";
        EXPECT_GE(st.commSeconds, st.overlappedSeconds);
        EXPECT_GE(st.overlappedSeconds, 0.0);
        EXPECT_GE(st.finalizeWaitSeconds, 0.0);
        if (iter == 1) {
          EXPECT_GE(st.backwardSeconds, 0.019);
          EXPECT_GT(st.overlappedSeconds, 0.0);
        }
      }
      EXPECT_EQ(red.layoutVersion(), 0u);
    }
    pg->barrier()->wait();
  });
}

// Averaging is torch's DDP's, bit for bit: a gradient copied into its bucket is multiplied by
// 1 / world size (rounded to the dtype's compute type) on the way; a gradient that already is its
// bucket slot (gradientAsBucketView after the first step) is divided by the world size in place;
// then a SUM allreduce. The reference averages in a plain loop and allreduces a buffer of the same
// size on the same group (so the sum runs in the same order); with only rank 0's gradient nonzero
// the result is g0 * (1 / ws) or g0 / ws whatever the order, which is what torch's DDP gives
// (integrations/torch/tests/reducer_vs_torch.py runs torch and the Reducer side by side).
// kSumThenDivide keeps the old order (sum, then divide) on request.
TEST_P(ReducerTest, AveragesBitForBitAsTorch) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-bits");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    // Values whose products with 1/3 round differently from their quotients by 3.
    auto value = [&](int r, size_t p, size_t e) {
      return std::sin(0.37 * static_cast<double>(e + 1) + 1.3 * r + 0.1 * static_cast<double>(p)) *
             std::pow(10.0, static_cast<double>(e % 7) - 3.0);
    };
    using Averaging = ReducerOptions::Averaging;
    // How the gradient enters: copied from Parameter::grad, in its bucket view (markReady(i)), or
    // from a tensor outside the view (markReady(i, grad)).
    enum class Entry { kCopy, kInView, kOutsideView };
    for (Averaging avg : {Averaging::kScaleThenSum, Averaging::kSumThenDivide}) {
      for (Entry entry : {Entry::kCopy, Entry::kInView, Entry::kOutsideView}) {
        for (bool onlyRankZero : {false, true}) {
          const bool view = entry != Entry::kCopy;
          const std::string what = std::string(avg == Averaging::kScaleThenSum ? "scale" : "sum") +
                                   (entry == Entry::kCopy     ? ", copies"
                                    : entry == Entry::kInView ? ", views"
                                                              : ", given") +
                                   (onlyRankZero ? ", rank 0 only" : ", every rank");
          TestModel m({{1000, DataType::kFloat32, "w"}, {257, DataType::kFloat64, "b"}});
          ReducerOptions opts;
          opts.gradientAsBucketView = view;
          opts.averaging = avg;
          opts.rebuildBuckets = false;
          Reducer red(m.parameters(), pg, opts);
          auto gradOn = [&](int r, size_t p, size_t e) {
            return onlyRankZero && r != 0 ? 0.0 : value(r, p, e);
          };
          for (size_t p = 0; p < m.size(); ++p) {
            const Tensor g = entry == Entry::kOutsideView ? m.grad(p) : gradOf(red, m, p);
            fillTensor(g, [&](size_t e) { return gradOn(rank, p, e); });
            if (entry == Entry::kOutsideView) {
              red.markReady(p, g);
              // Copied at once: what the tensor holds after markReady must not matter.
              fillTensor(g, [](size_t) { return std::nan(""); });
            } else {
              red.markReady(p);
            }
          }
          red.finalize();
          // The reference, per parameter, on its own buffer of the parameter's size.
          const bool averages = avg == Averaging::kScaleThenSum && size > 1;
          const bool divides = averages && entry == Entry::kInView;
          for (size_t p = 0; p < m.size(); ++p) {
            const size_t n = m.spec(p).numel;
            const bool f32 = m.spec(p).dtype == DataType::kFloat32;
            std::vector<float> rf(f32 ? n : 0);
            std::vector<double> rd(f32 ? 0 : n);
            const float sf = static_cast<float>(1.0 / size);
            const double sd = 1.0 / size;
            auto entered = [&](double g) {
              if (!averages) return g;
              if (f32) {
                const float gf = static_cast<float>(g);
                return static_cast<double>(divides ? gf / static_cast<float>(size) : gf * sf);
              }
              return divides ? g / static_cast<double>(size) : g * sd;
            };
            for (size_t e = 0; e < n; ++e) {
              const double g = entered(gradOn(rank, p, e));
              if (f32) rf[e] = static_cast<float>(g);
              if (!f32) rd[e] = g;
            }
            Tensor ref = f32 ? tensorOf(rf.data(), n) : tensorOf(rd.data(), n);
            pg->allreduce(ref)->wait();
            if (avg == Averaging::kSumThenDivide) {
              for (size_t e = 0; e < n; ++e) {
                if (f32) rf[e] /= static_cast<float>(size);
                if (!f32) rd[e] /= static_cast<double>(size);
              }
            }
            const Tensor got = gradOf(red, m, p);
            ASSERT_EQ(std::memcmp(got.data, ref.data, ref.nbytes()), 0)
                << what << ": " << m.spec(p).name
                << " differs from the reference, e.g. element 0: " << getValue(got, 0) << " vs "
                << getValue(ref, 0);
            if (onlyRankZero && averages) {
              for (size_t e = 0; e < n; ++e) {
                const double g0 = value(0, p, e);
                const double want = f32 ? static_cast<double>(divides ? static_cast<float>(g0) /
                                                                            static_cast<float>(size)
                                                                      : static_cast<float>(g0) * sf)
                                        : (divides ? g0 / static_cast<double>(size) : g0 * sd);
                ASSERT_EQ(getValue(got, e), want)
                    << what << ": " << m.spec(p).name << "[" << e << "] is not g0 "
                    << (divides ? "/ " : "* (1 / ") << size << (divides ? "" : ")");
              }
            }
          }
        }
      }
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, RebuildsBucketsFromRankZerosReadyOrder) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-rebuild");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (bool view : {false, true}) {
      const std::string mode = view ? "grads as views" : "grads copied";
      TestModel m(mixedSpecs(10));
      ReducerOptions opts;
      opts.gradientAsBucketView = view;
      opts.firstBucketBytes = 64;
      opts.bucketCapBytes = 256;
      Reducer red(m.parameters(), pg, opts);
      const std::vector<size_t> rank0Order{0, 2, 4, 6, 8, 1, 3, 5, 7, 9};
      // Other ranks see their gradients in other orders (rotations of the reverse order).
      std::vector<size_t> mine = rank0Order;
      if (rank != 0) {
        mine = layers::reverseOrder(m.size());
        std::rotate(mine.begin(), mine.begin() + rank, mine.end());
      }
      const Tensor before = view ? red.gradView(0) : Tensor();
      for (int iter = 0; iter < 3; ++iter) {
        for (size_t p : mine) produceGrad(red, m, rank, p, iter);
        const ddp::IterationStats st = red.finalize();
        EXPECT_EQ(st.rebuiltBuckets, iter == 0) << mode << " iteration " << iter;
        // After the rebuild, grads as views live in the new buckets and still hold the result.
        expectMeans(red, m, size, iter, mode + " iteration " + std::to_string(iter));
      }
      EXPECT_EQ(red.layoutVersion(), 1u);
      expectLayout(red.buckets(), layers::assignBuckets(tensorSpecs(m), rank0Order, {64, 256}),
                   mode + ": rebuilt from rank 0's order");
      expectSameLayoutEverywhere(*pg, red.buckets());
      if (view) {
        EXPECT_NE(red.gradView(0).data, before.data) << "the views moved";
      }
    }
    pg->barrier()->wait();
  });
}

// The rebuild after the first iteration compares rank 0's order's layout with the buckets it has
// before it allocates anything: an unchanged layout keeps its buckets, and the iteration never
// holds a second set of buckets (every gradient twice). Counted (c10d/layers/common/memory.h).
TEST_P(ReducerTest, AnUnchangedLayoutIsKeptWithoutASecondSetOfBuckets) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-keep");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    TestModel m(mixedSpecs(10));
    ReducerOptions opts;
    opts.firstBucketBytes = 64;
    opts.bucketCapBytes = 256;
    Reducer red(m.parameters(), pg, opts);
    int64_t bucketBytes = 0;
    for (const auto& b : red.buckets()) bucketBytes += static_cast<int64_t>(b.bytes);
    const int64_t before = layers::layerMemory().liveBytes;
    layers::resetLayerMemoryPeak();
    for (size_t p : layers::reverseOrder(m.size())) produceGrad(red, m, rank, p, 0);
    const ddp::IterationStats st = red.finalize();
    const layers::LayerMemory after = layers::layerMemory();
    EXPECT_FALSE(st.rebuiltBuckets) << "rank " << rank;
    EXPECT_EQ(red.layoutVersion(), 0u) << "rank " << rank;
    expectMeans(red, m, size, 0, "rank " + std::to_string(rank));
    EXPECT_LT(after.peakBytes - before, bucketBytes / 2)
        << "rank " << rank << ": the first iteration allocated " << after.peakBytes - before
        << " bytes beyond the " << bucketBytes << " of its buckets";
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, LaunchesBucketsInIndexOrder) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-order");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    TestModel m({{16, DataType::kFloat32, "a"},
                 {16, DataType::kFloat32, "b"},
                 {16, DataType::kFloat32, "c"},
                 {16, DataType::kFloat32, "d"}});
    std::vector<size_t> launched;
    std::vector<bool> last;
    ReducerOptions opts;
    opts.firstBucketBytes = 64;  // one 64-byte parameter per bucket: bucket b holds 3 - b
    opts.bucketCapBytes = 64;
    opts.rebuildBuckets = false;
    opts.commHook = [&](ProcessGroup& g, const ddp::GradBucket& b) {
      launched.push_back(b.index);
      last.push_back(b.isLast);
      return ddp::allreduceHook()(g, b);
    };
    Reducer red(m.parameters(), pg, opts);
    ASSERT_EQ(red.buckets().size(), 4u);
    for (int iter = 0; iter < 2; ++iter) {
      launched.clear();
      last.clear();
      produceGrad(red, m, rank, 0, iter);  // bucket 3: waits for 0, 1, 2
      produceGrad(red, m, rank, 1, iter);  // bucket 2
      EXPECT_TRUE(launched.empty()) << "buckets 3 and 2 must wait for bucket 0";
      produceGrad(red, m, rank, 3, iter);  // bucket 0: goes at once
      EXPECT_EQ(launched, std::vector<size_t>({0}));
      produceGrad(red, m, rank, 2, iter);  // bucket 1, then the waiting 2 and 3
      EXPECT_EQ(launched, std::vector<size_t>({0, 1, 2, 3}));
      EXPECT_EQ(last, std::vector<bool>({false, false, false, true}));
      red.finalize();
      expectMeans(red, m, size, iter, "out-of-order iteration " + std::to_string(iter));
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, MarkReadyFromSeveralThreads) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-threads");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    TestModel m(mixedSpecs(16));
    ReducerOptions opts;
    opts.firstBucketBytes = 64;
    opts.bucketCapBytes = 256;
    Reducer red(m.parameters(), pg, opts);
    for (int iter = 0; iter < 3; ++iter) {
      // Four "autograd worker threads", each producing every fourth gradient.
      std::vector<std::thread> threads;
      for (size_t t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
          for (size_t p = m.size() - 1 - t;; p -= 4) {
            produceGrad(red, m, rank, p, iter);
            if (p < 4) break;
          }
        });
      }
      for (auto& t : threads) t.join();
      red.finalize();
      expectMeans(red, m, size, iter, "threads iteration " + std::to_string(iter));
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, NoSyncAccumulatesThenReducesTheSum) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-nosync");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    constexpr int kMicro = 3;
    for (bool view : {false, true}) {
      const std::string mode = view ? "grads as views" : "grads copied";
      TestModel m(mixedSpecs(6));
      ReducerOptions opts;
      opts.gradientAsBucketView = view;
      opts.firstBucketBytes = 64;
      opts.bucketCapBytes = 256;
      Reducer red(m.parameters(), pg, opts);
      for (int round = 0; round < 2; ++round) {
        for (size_t p = 0; p < m.size(); ++p)
          fillTensor(gradOf(red, m, p), [](size_t) { return 0; });
        for (int mb = 0; mb < kMicro; ++mb) {
          const bool sync = mb == kMicro - 1;
          auto step = [&] {
            for (size_t p = m.size(); p-- > 0;) {
              const Tensor g = gradOf(red, m, p);
              fillTensor(g, [&](size_t e) { return getValue(g, e) + gradValue(rank, p, e, mb); });
              red.markReady(p);
            }
            return red.finalize();
          };
          if (sync) {
            EXPECT_TRUE(step().synced);
          } else {
            auto guard = red.noSync();
            EXPECT_FALSE(red.requireGradSync());
            EXPECT_FALSE(step().synced) << "no communication under noSync";
          }
          EXPECT_TRUE(red.requireGradSync()) << "the guard restores sync";
        }
        for (size_t p = 0; p < m.size(); ++p) {
          expectTensor(
              gradOf(red, m, p),
              [&](size_t e) {
                double s = 0;
                for (int mb = 0; mb < kMicro; ++mb) s += meanGrad(size, p, e, mb);
                return s;
              },
              1e-6, mode + " round " + std::to_string(round) + " " + m.spec(p).name);
        }
      }
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, UnusedParametersFollowTorch) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-unused");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    constexpr size_t kSomeRanks = 1;  // unused on rank 0 only
    constexpr size_t kNoRank = 4;     // unused everywhere
    for (bool view : {false, true}) {
      const std::string mode = view ? "grads as views" : "grads copied";
      TestModel m(mixedSpecs(6));
      ReducerOptions opts;
      opts.gradientAsBucketView = view;
      opts.findUnusedParameters = true;
      opts.firstBucketBytes = 64;
      opts.bucketCapBytes = 256;
      Reducer red(m.parameters(), pg, opts);
      for (int iter = 0; iter < 2; ++iter) {
        const std::string what = mode + " iteration " + std::to_string(iter);
        fillTensor(gradOf(red, m, kNoRank), [](size_t) { return 42; });
        fillTensor(gradOf(red, m, kSomeRanks), [](size_t) { return 99; });
        for (size_t p = m.size(); p-- > 0;) {
          if (p == kNoRank || (p == kSomeRanks && rank == 0)) continue;
          produceGrad(red, m, rank, p, iter);
        }
        const ddp::IterationStats st = red.finalize();
        EXPECT_EQ(st.locallyUnusedParameters, rank == 0 ? 2u : 1u) << what;
        EXPECT_EQ(st.globallyUnusedParameters, size == 1 ? 2u : 1u) << what;
        for (size_t p = 0; p < m.size(); ++p) {
          std::function<double(size_t)> want = [&](size_t e) { return meanGrad(size, p, e, iter); };
          if (p == kNoRank || (p == kSomeRanks && size == 1)) {
            want = [&](size_t) { return p == kNoRank ? 42.0 : 99.0; };  // untouched
          } else if (p == kSomeRanks) {
            want = [&](size_t e) {  // rank 0 counts as zero; divided by the world size
              return (meanGrad(size, p, e, iter) * size - gradValue(0, p, e, iter)) / size;
            };
          }
          expectTensor(gradOf(red, m, p), want, 1e-6, what + " " + m.spec(p).name);
        }
      }
      // A parameter rank 0 used only in a no-sync micro-batch contributes what it accumulated.
      for (size_t p = 0; p < m.size(); ++p) fillTensor(gradOf(red, m, p), [](size_t) { return 0; });
      {
        auto guard = red.noSync();
        for (size_t p = m.size(); p-- > 0;) {
          if (p != kNoRank) produceGrad(red, m, rank, p, 10);
        }
        red.finalize();
      }
      for (size_t p = m.size(); p-- > 0;) {
        if (p == kNoRank || (p == kSomeRanks && rank == 0)) continue;
        const Tensor g = gradOf(red, m, p);
        fillTensor(g, [&](size_t e) { return getValue(g, e) + gradValue(rank, p, e, 11); });
        red.markReady(p);
      }
      const ddp::IterationStats st = red.finalize();
      EXPECT_EQ(st.locallyUnusedParameters, 1u) << mode << ": used in the no-sync micro-batch";
      for (size_t p = 0; p < m.size(); ++p) {
        if (p == kNoRank) continue;
        expectTensor(
            gradOf(red, m, p),
            [&](size_t e) {
              double s = meanGrad(size, p, e, 10) + meanGrad(size, p, e, 11);
              if (p == kSomeRanks) s -= gradValue(0, p, e, 11) / size;
              return s;
            },
            1e-6, mode + " after no-sync " + m.spec(p).name);
      }
    }
    pg->barrier()->wait();
  });
}

TEST_P(ReducerTest, CommHooks) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("ddp-hooks");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    struct Case {
      std::string name;
      ddp::CommHook hook;
      double tol;
    };
    std::vector<ddp::GradBucket> seen;
    // A user hook: SUM only. The Reducer must not divide after a hook.
    ddp::CommHook sumOnly = [&seen](ProcessGroup& g, const ddp::GradBucket& b) {
      seen.push_back(b);
      return g.allreduce(b.buffer);
    };
    const std::vector<Case> cases{{"allreduceHook", ddp::allreduceHook(), 1e-6},
                                  {"fp16CompressHook", ddp::fp16CompressHook(), 4e-3},
                                  {"bf16CompressHook", ddp::bf16CompressHook(), 3e-2},
                                  {"user sum hook", sumOnly, 1e-6}};
    for (const Case& c : cases) {
      for (bool view : {false, true}) {
        const std::string what = c.name + (view ? " (grads as views)" : " (grads copied)");
        TestModel m(mixedSpecs(7));
        ReducerOptions opts;
        opts.gradientAsBucketView = view;
        opts.firstBucketBytes = 64;
        opts.bucketCapBytes = 256;
        opts.commHook = c.hook;
        Reducer red(m.parameters(), pg, opts);
        seen.clear();
        for (size_t p = m.size(); p-- > 0;) produceGrad(red, m, rank, p, 1);
        red.finalize();
        const double factor = c.name == "user sum hook" ? size : 1;
        for (size_t p = 0; p < m.size(); ++p) {
          expectTensor(
              gradOf(red, m, p), [&](size_t e) { return factor * meanGrad(size, p, e, 1); }, c.tol,
              what + " " + m.spec(p).name);
        }
        if (c.name == "user sum hook") {
          const auto layout = red.buckets();
          ASSERT_EQ(seen.size(), layout.size()) << what;
          for (size_t b = 0; b < layout.size(); ++b) {
            EXPECT_EQ(seen[b].index, b);
            EXPECT_EQ(seen[b].parameters, layout[b].parameters);
            EXPECT_EQ(seen[b].buffer.numel, layout[b].numel);
            EXPECT_EQ(seen[b].buffer.dtype, layout[b].dtype);
            size_t offset = 0;
            for (size_t k = 0; k < seen[b].parameters.size(); ++k) {
              EXPECT_EQ(seen[b].offsets[k], offset);
              EXPECT_EQ(seen[b].numels[k], m.spec(seen[b].parameters[k]).numel);
              offset += seen[b].numels[k];
            }
          }
        }
      }
    }
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReducerTest, ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})),
                         caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReducerTest);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
