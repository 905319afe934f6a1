// ShardedOptimizer (ZeRO): the greedy partition; k steps on N ranks equal one unsharded
// FlatOptimizer stepped with the mean gradient, bit for bit (gradients whose sums are exact in any
// order: tests/layers/zero_fixture.h), for SGD / Adam / AdamW, in both gradient-reduction modes,
// with and without markReady, with ranks that own nothing; the kReduceToOwner buckets and their
// launch order, markReady from several threads; state bytes per rank; consolidateState on the
// first and last rank; a checkpoint saved at world size N and resumed at M != N. Every CPU
// backend, world sizes 1-4.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/layers/common/memory.h"
#include "tests/common/multiproc.h"
#include "tests/layers/zero_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using zero::ShardedOptimizer;
using zero::ZeroOptions;
using Mode = ZeroOptions::GradReduction;
using zero::gradReductionName;
using zero::ZeroStepStats;

const std::vector<size_t> kMixed{10, 40, 25, 25, 5, 30, 0, 17, 3};

std::string modeName(Mode m) {
  return zero::gradReductionName(m);
}

// Every rank's value of `mine`, gathered.
std::vector<int64_t> allgather(ProcessGroup& pg, int64_t mine) {
  std::vector<int64_t> all(static_cast<size_t>(pg.size()));
  pg.allgatherIntoTensor(tensorOf(all.data(), all.size()), tensorOf(&mine, 1))->wait();
  return all;
}

TEST(ZeroPartitionTest, GreedyLargestFirstToTheLeastLoadedRank) {
  // Worked by hand, world size 3: sorted by size 1(40) 5(30) 2(25) 3(25) 7(17) 0(10) 4(5) 8(3)
  // 6(0).
  //   1 -> r0 (40, 0, 0)    5 -> r1 (40, 30, 0)   2 -> r2 (40, 30, 25)  3 -> r2 (40, 30, 50)
  //   7 -> r1 (40, 47, 50)  0 -> r0 (50, 47, 50)  4 -> r1 (50, 52, 50)  8 -> r0 (53, 52, 50)
  //   6 -> r2 (53, 52, 50)
  EXPECT_EQ(zero::partitionParameters(kMixed, 3), (std::vector<int>{0, 0, 2, 2, 1, 1, 2, 1, 0}));
  // Ties between equal sizes go by index, ties between equal loads to the lowest rank:
  // 0 -> r0 (4, 0); 1 -> r1 (4, 4); 2 -> r0 (8, 4); 3 -> r1 (8, 8).
  EXPECT_EQ(zero::partitionParameters({4, 4, 4, 4}, 2), (std::vector<int>{0, 1, 0, 1}));
  // 1(9) -> r0 (9, 0); 2(5) -> r1 (9, 5); 4(4) -> r1 (9, 9); 0(3) -> r0 (12, 9); 3(2) -> r1.
  EXPECT_EQ(zero::partitionParameters({3, 9, 5, 2, 4}, 2), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(zero::partitionParameters(kMixed, 1), std::vector<int>(kMixed.size(), 0));
  // More ranks than parameters: the last ranks own nothing.
  EXPECT_EQ(zero::partitionParameters({7, 8}, 4), (std::vector<int>{1, 0}));
  EXPECT_TRUE(zero::partitionParameters({}, 3).empty());
  EXPECT_THROW(zero::partitionParameters({1}, 0), InvalidArgument);
}

struct RunConfig {
  Mode mode;
  optim::OptimizerOptions optimizer;
  std::vector<size_t> numels;
  std::vector<optim::ParamGroup> groups = {};
  zero::GradClip clip = {};
};

// Steps a ShardedOptimizer `steps` times and compares with the reference after each step; checks
// the partition, state bytes and consolidateState on the first and last rank.
void runAgainstReference(ProcessGroup& pgRef, const std::shared_ptr<ProcessGroup>& pg,
                         const RunConfig& cfg, int rank, int size, int steps) {
  const std::string what = modeName(cfg.mode) + " " + cfg.optimizer.describe() + " over " +
                           std::to_string(cfg.numels.size()) + " parameters";
  ZeroModel m(cfg.numels, rank);
  ZeroOptions opts;
  opts.optimizer = cfg.optimizer;
  opts.gradReduction = cfg.mode;
  opts.bucketCapBytes = 64;  // many buckets
  opts.paramGroups = cfg.groups;
  opts.clip = cfg.clip;
  // The framework frees a gradient once told: here it overwrites it with NaN, which would reach
  // the parameters if the optimizer read it later.
  std::vector<int> released(cfg.numels.size(), 0);
  opts.onGradReleased = [&](size_t p) {
    ++released[p];
    std::fill(m.grad(p).begin(), m.grad(p).end(), std::nanf(""));
  };
  ShardedOptimizer opt(m.parameters(), pg, opts);
  ReferenceOptimizer ref(cfg.optimizer, cfg.numels, cfg.groups, cfg.clip);
  ref.expectParamsEqual(m, what + ": rank 0's parameters after construction");

  // The partition: the greedy rule, every parameter in exactly one shard, shards ascending.
  const std::vector<int> owners = zero::partitionParameters(cfg.numels, size);
  std::vector<int> seen(cfg.numels.size(), 0);
  size_t largest = 0;
  for (int r = 0; r < size; ++r) {
    const std::vector<size_t> shard = opt.shardOf(r);
    EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end())) << what;
    size_t numel = 0;
    for (size_t p : shard) {
      ++seen[p];
      EXPECT_EQ(owners[p], r) << what << ": parameter " << p;
      EXPECT_EQ(opt.ownerOf(p), r) << what << ": parameter " << p;
      numel += cfg.numels[p];
    }
    EXPECT_EQ(opt.shardNumel(r), numel) << what << ": rank " << r;
    largest = std::max(largest, numel);
  }
  for (size_t p = 0; p < seen.size(); ++p) EXPECT_EQ(seen[p], 1) << what << ": parameter " << p;
  EXPECT_EQ(opt.chunkNumel(), largest) << what;
  // Rounds of R elements of every shard: bucketCapBytes / 4 / N, at least 1, at most S.
  const size_t round = std::min(largest, std::max<size_t>(64 / 4 / static_cast<size_t>(size), 1));
  EXPECT_EQ(opt.roundNumel(), round) << what;
  const size_t rounds = round == 0 ? 0 : (largest + round - 1) / round;

  // State bytes: this rank holds its shard's slots only; the ranks together hold the full state.
  const size_t slots = cfg.optimizer.slotNames().size();
  const size_t totalNumel = std::accumulate(cfg.numels.begin(), cfg.numels.end(), size_t{0});
  EXPECT_EQ(opt.fullStateBytes(), slots * totalNumel * sizeof(float)) << what;
  EXPECT_EQ(opt.localStateBytes(), slots * opt.shardNumel(rank) * sizeof(float)) << what;
  EXPECT_LE(opt.localStateBytes(), slots * largest * sizeof(float)) << what;
  const std::vector<int64_t> bytes = allgather(pgRef, static_cast<int64_t>(opt.localStateBytes()));
  EXPECT_EQ(static_cast<size_t>(std::accumulate(bytes.begin(), bytes.end(), int64_t{0})),
            opt.fullStateBytes())
      << what;

  const size_t numBuckets = opt.buckets().size();
  for (int s = 0; s < steps; ++s) {
    const std::string at = what + ", step " + std::to_string(s + 1);
    m.produceGrads(rank, s);
    std::fill(released.begin(), released.end(), 0);
    // Step 0: every parameter marked, last to first; step 1: none (step() stages them all);
    // step 2: every other parameter, and rank 1 in another order (the launch order rule keeps
    // the collectives matched).
    std::vector<size_t> marks;
    if (s == 0) {
      for (size_t p = m.size(); p-- > 0;) marks.push_back(p);
    } else if (s >= 2) {
      for (size_t p = 0; p < m.size(); p += 2) marks.push_back(p);
      if (rank != 1) std::reverse(marks.begin(), marks.end());
    }
    for (size_t p : marks) opt.markReady(p);
    const zero::ZeroStepStats st = opt.step();
    ref.step(size, s);
    ref.expectParamsEqual(m, at + " on rank " + std::to_string(rank));
    EXPECT_EQ(st.step, static_cast<uint64_t>(s + 1)) << at;
    EXPECT_EQ(opt.steps(), static_cast<uint64_t>(s + 1)) << at;
    EXPECT_EQ(st.localStateBytes, opt.localStateBytes()) << at;
    EXPECT_GE(st.commSeconds, 0.0) << at;
    EXPECT_GE(st.stepSeconds, 0.0) << at;
    EXPECT_EQ(st.rounds, rounds) << at;
    EXPECT_DOUBLE_EQ(st.gradNorm, ref.lastNorm()) << at;
    EXPECT_EQ(st.bucketsLaunched, numBuckets) << at;
    if (s == 0) {
      EXPECT_EQ(st.bucketsLaunchedEarly, numBuckets) << at << ": all launched by markReady";
    }
    if (s == 1) {
      EXPECT_EQ(st.bucketsLaunchedEarly, 0u) << at;
    }
    for (size_t p = 0; p < m.size(); ++p) {
      EXPECT_EQ(released[p], 1) << at << ": parameter " << p << "'s gradient released";
    }
  }

  // The full state on the first and the last rank equals the reference's; empty elsewhere.
  const optim::OptimizerState want = ref.state();
  for (int dst : {0, size - 1}) {
    const optim::OptimizerState full = opt.consolidateState(dst);
    EXPECT_EQ(full.steps, static_cast<uint64_t>(steps)) << what;
    if (rank == dst) {
      expectStateEqual(full, want, what + ": consolidateState(" + std::to_string(dst) + ")");
    } else {
      EXPECT_TRUE(full.slots.empty())
          << what << ": consolidateState(" << dst << ") on rank " << rank;
    }
  }
}

TEST_P(ZeroTest, StepsEqualOneOptimizerOverTheMeanGradient) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-ref");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      for (const optim::OptimizerOptions& o : referenceOptimizers()) {
        runAgainstReference(*pg, pg, {mode, o, kMixed}, rank, size, 3);
      }
      // Two parameters: at world sizes 3 and 4 some ranks own nothing. Plain SGD: no state.
      optim::OptimizerOptions plain;
      plain.lr = 0.5;
      runAgainstReference(*pg, pg, {mode, referenceOptimizers()[2], {6, 9}}, rank, size, 2);
      runAgainstReference(*pg, pg, {mode, plain, {6, 9}}, rank, size, 2);
      // Nothing to shard at all.
      runAgainstReference(*pg, pg, {mode, referenceOptimizers()[0], {0, 0}}, rank, size, 1);
    }
    pg->barrier()->wait();
  });
}

// torch's param_groups (per-group lr and weight decay) and clip_grad_norm_ over the shards: the
// norm of the mean gradient over every rank's shard, and the clipped update, equal the unsharded
// reference's; 2-norm and inf-norm, clipping at every step or never.
TEST_P(ZeroTest, ParameterGroupsAndGradientClipping) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-groups");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const std::vector<optim::ParamGroup> groups = {{{1, 4}, 0.25, 0.0}, {{7}, 0.001, 0.5}};
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      for (const optim::OptimizerOptions& o : referenceOptimizers()) {
        for (double normType : {2.0, 1.0, double(INFINITY)}) {
          runAgainstReference(*pg, pg, {mode, o, kMixed, groups, {0.5, normType}}, rank, size, 3);
        }
        runAgainstReference(*pg, pg, {mode, o, kMixed, {}, {1e9, 2.0}}, rank, size, 2);
      }
    }
    pg->barrier()->wait();
  });
}

TEST_P(ZeroTest, ReduceToOwnerBucketsAndConcurrentMarks) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-buckets");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    ZeroModel m(kMixed, rank);
    ZeroOptions opts;
    opts.optimizer = referenceOptimizers()[1];
    opts.gradReduction = Mode::kReduceToOwner;
    opts.bucketCapBytes = 200;  // 50 floats
    ShardedOptimizer opt(m.parameters(), pg, opts);
    const auto buckets = opt.buckets();
    // Every parameter in one bucket; one owner per bucket; descending inside; at most the cap
    // unless alone; launch order by lowest index, descending.
    std::vector<int> seen(kMixed.size(), 0);
    for (size_t b = 0; b < buckets.size(); ++b) {
      ASSERT_FALSE(buckets[b].empty());
      size_t bytes = 0;
      for (size_t k = 0; k < buckets[b].size(); ++k) {
        const size_t p = buckets[b][k];
        ++seen[p];
        EXPECT_EQ(opt.ownerOf(p), opt.ownerOf(buckets[b][0])) << "bucket " << b;
        if (k > 0) {
          EXPECT_LT(p, buckets[b][k - 1]) << "bucket " << b;
        }
        bytes += kMixed[p] * sizeof(float);
      }
      if (buckets[b].size() > 1) {
        EXPECT_LE(bytes, 200u) << "bucket " << b;
      }
      if (b > 0) {
        EXPECT_LT(buckets[b].back(), buckets[b - 1].back()) << "launch order";
      }
    }
    for (size_t p = 0; p < seen.size(); ++p) EXPECT_EQ(seen[p], 1) << "parameter " << p;
    if (size == 3) {
      // Shards (see the partition test): r0 {0, 1, 8} r1 {4, 5, 7} r2 {2, 3, 6}. Walking each
      // from the end with a 50-float cap: r0 [8, 1] (43) then [0]; r1 [7, 5] (47) then [4];
      // r2 [6, 3, 2] (50). Ordered by lowest index, descending.
      EXPECT_EQ(buckets, (std::vector<std::vector<size_t>>{{7, 5}, {4}, {6, 3, 2}, {8, 1}, {0}}));
    }
    if (size == 1) {
      // One owner: the Reducer's reverse walk, closing before 50 floats would be exceeded.
      EXPECT_EQ(buckets, (std::vector<std::vector<size_t>>{{8, 7, 6, 5}, {4, 3}, {2}, {1, 0}}));
    }

    // Backward from two threads (an autograd engine's workers): each marks half, concurrently.
    ReferenceOptimizer ref(opts.optimizer, kMixed);
    for (int s = 0; s < 3; ++s) {
      m.produceGrads(rank, s);
      std::thread t1([&] {
        for (size_t p = kMixed.size(); p-- > 0;) {
          if (p % 2 == 0) opt.markReady(p);
        }
      });
      std::thread t2([&] {
        for (size_t p = kMixed.size(); p-- > 0;) {
          if (p % 2 == 1) opt.markReady(p);
        }
      });
      t1.join();
      t2.join();
      const zero::ZeroStepStats st = opt.step();
      EXPECT_EQ(st.bucketsLaunchedEarly, buckets.size()) << "step " << s;
      ref.step(size, s);
      ref.expectParamsEqual(m, "two-thread backward, step " + std::to_string(s + 1));
    }
    pg->barrier()->wait();
  });
}

// Saved at world size N after 2 steps (kReduceScatter), resumed at M != N for 2 more
// (kReduceToOwner): equal to the reference that never stopped (its last 2 steps average over M).
TEST_P(ZeroTest, CheckpointResumesAtAnotherWorldSize) {
  const BackendParam bp = p();
  const int n = ws();
  const int mRanks = n % 4 + 1;  // 1->2, 2->3, 3->4, 4->1
  const std::vector<BackendParam> able = conformanceBackends(mRanks);
  if (std::none_of(able.begin(), able.end(),
                   [&](const BackendParam& b) { return b.label() == bp.label(); })) {
    GTEST_SKIP() << bp.label() << " cannot run " << mRanks << " ranks";
  }
  const std::string ckpt = uniqueTempPath("zero-ckpt") + ".bin";
  const optim::OptimizerOptions o = referenceOptimizers()[2];  // AdamW
  const std::string path1 = uniqueTempPath("zero-ckpt-n");
  expectAllRanksOk(n, [&](int rank, int size) {
    auto pg = makeGroup(bp, path1, rank, size);
    ZeroModel m(kMixed, rank);
    ZeroOptions opts;
    opts.optimizer = o;
    ShardedOptimizer opt(m.parameters(), pg, opts);
    for (int s = 0; s < 2; ++s) {
      m.produceGrads(rank, s);
      opt.step();
    }
    const optim::OptimizerState full = opt.consolidateState(size - 1);
    if (rank == size - 1) full.save(ckpt);
    pg->barrier()->wait();
  });
  const std::string path2 = uniqueTempPath("zero-ckpt-m");
  expectAllRanksOk(mRanks, [&](int rank, int size) {
    auto pg = makeGroup(bp, path2, rank, size);
    // The reference that never stopped: 2 steps averaged over N ranks, then 2 over M.
    ReferenceOptimizer ref(o, kMixed);
    ref.step(n, 0);
    ref.step(n, 1);
    // The framework restores its parameters from its own checkpoint: here, the reference's.
    ZeroModel m(kMixed, rank);
    for (size_t p = 0; p < m.size(); ++p) {
      std::copy(ref.param(p), ref.param(p) + kMixed[p], m.data(p).begin());
    }
    ZeroOptions opts;
    opts.optimizer = o;
    opts.gradReduction = Mode::kReduceToOwner;
    ShardedOptimizer opt(m.parameters(), pg, opts);
    opt.loadState(optim::OptimizerState::load(ckpt));
    EXPECT_EQ(opt.steps(), 2u);
    for (int s = 2; s < 4; ++s) {
      m.produceGrads(rank, s);
      opt.step();
      ref.step(size, s);
      ref.expectParamsEqual(
          m, "resumed at world size " + std::to_string(size) + ", step " + std::to_string(s + 1));
    }
    const optim::OptimizerState full = opt.consolidateState(0);
    if (rank == 0) expectStateEqual(full, ref.state(), "state after resuming");
    pg->barrier()->wait();
  });
  std::remove(ckpt.c_str());
}

// kReduceScatter's buckets by the documented rule, walked out here: every parameter's elements
// from the last to the first, each to the current bucket until its owner's part would pass W.
std::vector<std::vector<size_t>> scatterBuckets(const std::vector<size_t>& numels, int size,
                                                size_t w, size_t* widest) {
  const std::vector<int> owners = zero::partitionParameters(numels, size);
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> params;
  std::vector<size_t> part(static_cast<size_t>(size), 0);
  auto close = [&] {
    *widest = std::max(*widest, *std::max_element(part.begin(), part.end()));
    out.push_back(params);
    params.clear();
    std::fill(part.begin(), part.end(), 0);
  };
  for (size_t p = numels.size(); p-- > 0;) {
    size_t& mine = part[static_cast<size_t>(owners[p])];
    for (size_t left = numels[p]; left > 0;) {
      if (mine == w) close();
      const size_t take = std::min(left, w - mine);
      mine += take;
      left -= take;
      if (params.empty() || params.back() != p) params.push_back(p);
    }
  }
  if (!params.empty()) close();
  return out;
}

// What a rank needs, from the documented rule (sharded_optimizer.h, "Memory"): shards of S_r
// floats of gradients and S_r of parameters with a zero tail of min(R, S - S_r); one or two
// staging buffers (two when there are several allgather rounds or several buckets it packs into
// staging) of max(N * R, the largest kReduceToOwner bucket another rank owns, kReduceScatter's
// (N + 1) * the widest part) floats.
size_t expectedShardBytes(const ShardedOptimizer& opt, int rank) {
  const size_t mine = opt.shardNumel(rank);
  return (2 * mine + std::min(opt.roundNumel(), opt.chunkNumel() - mine)) * sizeof(float);
}

size_t expectedStagingBytes(const ShardedOptimizer& opt, const std::vector<size_t>& numels,
                            int rank) {
  const size_t n = static_cast<size_t>(opt.group().size());
  const size_t s = opt.chunkNumel();
  const size_t r = opt.roundNumel();
  const size_t rounds = r == 0 ? 0 : (s + r - 1) / r;
  size_t staging = n * r;
  size_t staged = 0;
  if (opt.options().gradReduction == Mode::kReduceScatter) {
    if (r > 0) {
      size_t widest = 0;
      const auto buckets = scatterBuckets(numels, static_cast<int>(n),
                                          std::max<size_t>(n * r / (n + 1), 1), &widest);
      EXPECT_EQ(opt.buckets(), buckets) << "kReduceScatter buckets";
      staging = std::max(staging, (n + 1) * widest);
      staged = buckets.size();
    }
  } else {
    for (const std::vector<size_t>& bucket : opt.buckets()) {
      if (opt.ownerOf(bucket[0]) == rank) continue;  // reduced in place in the shard
      size_t numel = 0;
      for (size_t p : bucket) numel += numels[p];
      staging = std::max(staging, numel);
      ++staged;
    }
  }
  const size_t buffers = rounds > 1 || staged > 1 ? 2 : 1;
  return buffers * staging * sizeof(float);
}

// Memory, measured: what the optimizer allocates (c10d/layers/common/memory.h counts every buffer
// of the layers) is exactly this rank's shards of gradients and parameters (S_r floats each, not
// the largest shard's, and a zero tail of at most R; expectedShardBytes), the staging this rank
// needs (expectedStagingBytes) and the state of its own shard: ZeRO-2's P / N + two buckets,
// whatever the model's size. A stray full-size allocation (a flat gradient buffer, a state of every
// parameter, a shard-sized buffer on a rank that owns little) fails, and so does a step that
// allocates.
TEST_P(ZeroTest, CountedMemoryIsTheShardsOwn) {
  const BackendParam bp = p();
  // 436 KB of parameters against 16 KiB buckets, the largest parameter 4 KB; and a model whose
  // first parameter makes rank 0's shard 16 KB while the others' hold a few floats, against 1 KiB
  // buckets.
  std::vector<size_t> many;
  for (size_t i = 0; i < 100; ++i) many.push_back(1000 + 10 * i);
  const std::vector<std::pair<std::vector<size_t>, size_t>> models = {
      {many, 16 << 10}, {{4000, 8, 8, 8, 3}, 1 << 10}};
  // Each case in processes of its own: an earlier optimizer's buffers live on in the callbacks of
  // Works the backend still holds, and would be freed in the middle of the next measurement.
  for (const auto& model : models) {
    const std::vector<size_t>& numels = model.first;  // (a lambda cannot capture a binding)
    const size_t cap = model.second;
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      const std::string path = uniqueTempPath("zero-memory");
      expectAllRanksOk(ws(), [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size);
        size_t total = 0;
        size_t largest = 0;
        for (size_t n : numels) total += n, largest = std::max(largest, n);
        const std::string what = std::string(gradReductionName(mode)) + " over " +
                                 std::to_string(numels.size()) + " parameters on rank " +
                                 std::to_string(rank) + " of " + std::to_string(size);
        ZeroModel m(numels, rank);
        ZeroOptions o;
        o.optimizer = referenceOptimizers()[1];  // Adam: two slots
        o.gradReduction = mode;
        o.bucketCapBytes = cap;
        const int64_t before = layers::layerMemory().liveBytes;
        ShardedOptimizer opt(m.parameters(), pg, o);
        const int64_t built = layers::layerMemory().liveBytes - before;
        m.produceGrads(rank, 0);
        layers::resetLayerMemoryPeak();
        for (size_t p = numels.size(); p-- > 0;) opt.markReady(p);  // buckets launched early
        const ZeroStepStats st = opt.step();
        const layers::LayerMemory after = layers::layerMemory();

        const size_t mine = opt.shardNumel(rank);  // S_r
        EXPECT_EQ(st.shardBytes, expectedShardBytes(opt, rank)) << what;
        EXPECT_EQ(st.localStateBytes, 2 * mine * sizeof(float)) << what;
        EXPECT_EQ(st.stagingBytes, expectedStagingBytes(opt, numels, rank)) << what;
        EXPECT_EQ(built, static_cast<int64_t>(st.shardBytes + st.stagingBytes + st.localStateBytes))
            << what << ": allocated other than its shards, its staging and its state";
        // Greedy partition: no rank holds more than P / N plus one parameter.
        const size_t shardBound = total / static_cast<size_t>(size) + largest;
        EXPECT_LE(mine, shardBound) << what;
        // At most two buffers of a bucket each (a round's N * R floats, or a bucket of whole
        // parameters).
        const size_t bucketBound = std::max<size_t>(cap, largest * sizeof(float));
        EXPECT_LE(st.stagingBytes, 2 * bucketBound) << what;
        // Never more than the old layout's two shards of S floats each, with the same staging.
        EXPECT_LE(st.shardBytes, 2 * opt.chunkNumel() * sizeof(float)) << what;
        // Rank 0 owns parameter 0 alone; kReduceToOwner stages that parameter whole on the
        // others, kReduceScatter R of its elements at a time.
        if (mode == Mode::kReduceScatter && size > 1 && rank > 0 && numels[0] == 4000) {
          EXPECT_LT(static_cast<size_t>(built), opt.chunkNumel() * sizeof(float))
              << what << ": a buffer of rank 0's shard on a rank that owns " << mine << " elements";
        }
        EXPECT_EQ(after.liveBytes - before, built) << what << ": a step kept memory";
        EXPECT_EQ(after.peakBytes, after.liveBytes) << what << ": a step allocated a buffer";
        EXPECT_EQ(st.layerBytes, static_cast<size_t>(after.liveBytes)) << what;
        pg->barrier()->wait();
      });
    }
  }
}

// The framework's gradient of parameter i is released (onGradReleased) as soon as the buckets
// holding it have been copied, before backward of the parameters below ends: a backward that
// allocates each gradient just before computing it (markReady(i, grad)) and frees it when told
// never holds every gradient at once, and the result is still the reference's. Under ASan a read
// of a freed gradient is a heap-use-after-free.
TEST_P(ZeroTest, GradientsReleasedDuringBackward) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-release");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      const std::string what = modeName(mode) + " on rank " + std::to_string(rank);
      ZeroModel m(kMixed, rank);  // its grad arrays stay untouched: backward uses its own
      std::vector<std::unique_ptr<float[]>> live(kMixed.size());
      size_t liveFloats = 0;
      size_t peakFloats = 0;
      std::vector<int> released(kMixed.size(), 0);
      ZeroOptions opts;
      opts.optimizer = referenceOptimizers()[1];
      opts.gradReduction = mode;
      opts.bucketCapBytes = 64;  // several buckets per rank
      opts.onGradReleased = [&](size_t p) {
        ++released[p];
        if (live[p]) liveFloats -= kMixed[p];
        live[p].reset();  // freed
      };
      ShardedOptimizer opt(m.parameters(), pg, opts);
      const std::vector<std::vector<size_t>> buckets = opt.buckets();
      ASSERT_GT(buckets.size(), 1u) << what;
      // Parameter q is released once every bucket holding it is complete; marking last to
      // first, a bucket is complete once its lowest parameter is marked (and so are the buckets
      // before it in launch order). A parameter in no bucket is released when marked.
      std::vector<size_t> releasedAt(kMixed.size());  // the mark that releases it
      for (size_t q = 0; q < kMixed.size(); ++q) {
        releasedAt[q] = q;
        for (const std::vector<size_t>& b : buckets) {
          if (std::find(b.begin(), b.end(), q) != b.end()) releasedAt[q] = b.back();
        }
      }
      ReferenceOptimizer ref(opts.optimizer, kMixed);
      size_t total = 0;
      for (size_t n : kMixed) total += n;
      for (int s = 0; s < 3; ++s) {
        const std::string at = what + ", step " + std::to_string(s + 1);
        std::fill(released.begin(), released.end(), 0);
        peakFloats = 0;
        for (size_t p = kMixed.size(); p-- > 0;) {
          live[p].reset(new float[kMixed[p] + 1]);  // this parameter's gradient, computed now
          for (size_t e = 0; e < kMixed[p]; ++e) live[p][e] = gradValue(rank, p, e, s);
          liveFloats += kMixed[p];
          peakFloats = std::max(peakFloats, liveFloats);
          opt.markReady(p, tensorOf(live[p].get(), kMixed[p]));
          for (size_t q = 0; q < kMixed.size(); ++q) {
            EXPECT_EQ(released[q], releasedAt[q] >= p ? 1 : 0)
                << at << ": after markReady(" << p << "), parameter " << q << "'s gradient";
          }
        }
        EXPECT_EQ(liveFloats, 0u) << at << ": gradients never released";
        // The first buckets were copied and freed while backward went on.
        EXPECT_LT(peakFloats, total) << at << ": every gradient held at once";
        opt.step();
        ref.step(size, s);
        ref.expectParamsEqual(m, at);
      }
    }
    pg->barrier()->wait();
  });
}

// Destroyed in the middle of backward, with buckets in flight that the other ranks complete
// later: the optimizer's buffers stay alive until the backend is done with them (ASan: no
// use-after-free), and are freed then (the layers' memory back where it started).
TEST_P(ZeroTest, DestroyedWithWorkInFlight) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("zero-destroy");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (Mode mode : {Mode::kReduceScatter, Mode::kReduceToOwner}) {
      const std::string what = modeName(mode) + " on rank " + std::to_string(rank);
      ZeroModel m(kMixed, rank);
      ZeroOptions opts;
      opts.optimizer = referenceOptimizers()[1];
      opts.gradReduction = mode;
      opts.bucketCapBytes = 64;
      const int64_t before = layers::layerMemory().liveBytes;
      {
        ShardedOptimizer opt(m.parameters(), pg, opts);
        m.produceGrads(rank, 0);
        // Rank 0 launches its half of the buckets and goes; the others join later.
        if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (size_t p = kMixed.size(); p-- > kMixed.size() / 2;) opt.markReady(p);
      }
      // Every rank's collectives complete (they all launched the same buckets).
      pg->barrier()->wait();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (layers::layerMemory().liveBytes != before &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_EQ(layers::layerMemory().liveBytes, before) << what << ": buffers never freed";
    }
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ZeroTest, ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})),
                         zeroCaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZeroTest);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
