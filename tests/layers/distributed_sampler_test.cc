// DistributedSampler against torch's documented semantics, worked out by hand, and the shuffle
// against values printed by torch 1.13 and 2.6 (torch.randperm with a seeded CPU generator). The
// whole sampler is compared with torch's itself in integrations/torch/tests/sampler_vs_torch.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/layers/data/distributed_sampler.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace data {
namespace {

using Idx = std::vector<size_t>;

DistributedSampler::Options plain(bool dropLast = false) {
  DistributedSampler::Options o;
  o.shuffle = false;
  o.dropLast = dropLast;
  return o;
}

TEST(DistributedSampler, PadsByWrappingToAMultipleOfTheReplicas) {
  // 10 samples on 3 ranks: ceil(10 / 3) = 4 each, total 12 = [0..9, 0, 1].
  const std::vector<Idx> want{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, plain());
    EXPECT_EQ(s.numSamples(), 4u);
    EXPECT_EQ(s.totalSize(), 12u);
    EXPECT_EQ(s.indices(), want[r]) << "rank " << r;
  }
}

TEST(DistributedSampler, DropLastCutsTheTail) {
  // torch: ceil((10 - 3) / 3) = 3 each; the tail [9] is dropped.
  const std::vector<Idx> want{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, plain(true));
    EXPECT_EQ(s.numSamples(), 3u);
    EXPECT_EQ(s.indices(), want[r]) << "rank " << r;
  }
  // Evenly divisible: dropLast changes nothing.
  DistributedSampler even(12, 4, 1, plain(true));
  EXPECT_EQ(even.indices(), Idx({1, 5, 9}));
}

TEST(DistributedSampler, PaddingLongerThanTheDatasetRepeatsIt) {
  // 2 samples on 5 ranks: total 5 = [0, 1, 0, 1, 0] (torch repeats the list ceil(3 / 2) times).
  const Idx want{0, 1, 0, 1, 0};
  for (int r = 0; r < 5; ++r) {
    DistributedSampler s(2, 5, r, plain());
    EXPECT_EQ(s.indices(), Idx({want[r]})) << "rank " << r;
  }
  EXPECT_EQ(DistributedSampler(2, 5, 4, plain(true)).numSamples(), 0u);
  EXPECT_TRUE(DistributedSampler(2, 5, 4, plain(true)).indices().empty());
  EXPECT_TRUE(DistributedSampler(0, 3, 1, plain()).indices().empty());
}

TEST(DistributedSampler, ShufflesBySeedPlusEpoch) {
  EXPECT_EQ(torchRandperm(10, 0), Idx({4, 1, 7, 5, 3, 9, 0, 8, 6, 2}));
  EXPECT_EQ(torchRandperm(10, 1), Idx({5, 6, 1, 2, 0, 8, 9, 3, 7, 4}));
  EXPECT_EQ(torchRandperm(7, 45), Idx({5, 3, 1, 2, 4, 6, 0}));

  // seed 5, epoch 2 -> permutation of seed 7 = [5, 0, 3, 4, 1, 7, 9, 6, 8, 2], padded with 5, 0.
  const std::vector<Idx> want{{5, 4, 9, 2}, {0, 1, 6, 5}, {3, 7, 8, 0}};
  DistributedSampler::Options o;
  o.seed = 5;
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, o);
    s.setEpoch(2);
    EXPECT_EQ(s.epoch(), 2u);
    EXPECT_EQ(s.indices(), want[r]) << "rank " << r;
  }
  // Each epoch's ranks together read a permutation (no padding needed here); epochs differ.
  Idx epoch0, epoch1;
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(12, 4, r, o);
    for (size_t i : s.indices()) epoch0.push_back(i);
    s.setEpoch(1);
    for (size_t i : s.indices()) epoch1.push_back(i);
  }
  EXPECT_NE(epoch0, epoch1);
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  Idx all(12);
  std::iota(all.begin(), all.end(), size_t{0});
  EXPECT_EQ(epoch0, all);
  EXPECT_EQ(epoch1, all);
}

TEST(DistributedSampler, ShuffleIsUnbiasedEnough) {
  // Where index 0 lands over 4,000 seeds: each of 8 places ~500 times.
  std::vector<int> where(8, 0);
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    const Idx p = torchRandperm(8, seed);
    ++where[std::find(p.begin(), p.end(), size_t{0}) - p.begin()];
  }
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(where[k], 500, 100) << "position " << k;
}

TEST(DistributedSampler, RejectsABadRank) {
  EXPECT_THROW(DistributedSampler(10, 3, 3), InvalidArgument);
  EXPECT_THROW(DistributedSampler(10, 3, -1), InvalidArgument);
  EXPECT_THROW(DistributedSampler(10, 0, 0), InvalidArgument);
}

}  // namespace
}  // namespace data
C10D_NAMESPACE_END
}  // namespace c10d
