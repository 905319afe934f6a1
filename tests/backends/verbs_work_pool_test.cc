// WorkPool: every collective's Work comes from recycled, pre-touched blocks (no page fault on an
// op's path when a program first keeps more ops in flight); Works outlive the pool's owner; blocks
// return from any thread.
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/verbs/work_pool.h"

namespace c10d {
namespace verbs {
namespace {

TEST(VerbsWorkPool, AWorkTakesOneBlockAndGivesItBack) {
  auto pool = std::make_shared<WorkPool>();
  EXPECT_EQ(pool->blocksMade(), WorkPool::kSlabBlocks);  // the first slab comes with the pool
  EXPECT_EQ(pool->blocksFree(), WorkPool::kSlabBlocks);
  {
    auto w = WorkPool::make(pool, OpType::kAllreduce, 7, "verbs:test", Milliseconds(1000));
    // Work and control block fit one block (else they would come from the heap, unseen here).
    EXPECT_EQ(pool->blocksFree(), WorkPool::kSlabBlocks - 1);
    EXPECT_EQ(w->sequenceNumber(), 7u);
    EXPECT_EQ(w->groupName(), "verbs:test");
    w->finish();
    EXPECT_TRUE(w->isSuccess());
  }
  EXPECT_EQ(pool->blocksFree(), WorkPool::kSlabBlocks);
}

TEST(VerbsWorkPool, GrowsBySlabsAndKeepsWhatItMade) {
  auto pool = std::make_shared<WorkPool>();
  const size_t n = WorkPool::kSlabBlocks * 2 + 5;
  std::vector<std::shared_ptr<Work>> ws;
  for (size_t i = 0; i < n; ++i) ws.push_back(WorkPool::make(pool, OpType::kBarrier, i));
  EXPECT_EQ(pool->blocksMade(), WorkPool::kSlabBlocks * 3);
  EXPECT_EQ(pool->blocksFree(), WorkPool::kSlabBlocks * 3 - n);
  ws.clear();
  EXPECT_EQ(pool->blocksFree(), WorkPool::kSlabBlocks * 3);
  // The same number in flight again reuses the blocks.
  for (size_t i = 0; i < n; ++i) ws.push_back(WorkPool::make(pool, OpType::kBarrier, i));
  EXPECT_EQ(pool->blocksMade(), WorkPool::kSlabBlocks * 3);
}

TEST(VerbsWorkPool, AWorkOutlivesThePoolsOwner) {
  auto pool = std::make_shared<WorkPool>();
  std::weak_ptr<WorkPool> weak = pool;
  auto w = WorkPool::make(pool, OpType::kAllreduce, 1, "verbs:gone");
  pool.reset();  // the group went away; its Work is still held by the user
  EXPECT_FALSE(weak.expired());
  w->finish();
  EXPECT_EQ(w->groupName(), "verbs:gone");
  w.reset();  // the last block returns, and the pool goes with it (ASan: no leak, no use after
              // free)
  EXPECT_TRUE(weak.expired());
}

TEST(VerbsWorkPool, BlocksReturnFromAnyThread) {
  auto pool = std::make_shared<WorkPool>();
  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&pool, t] {
      std::vector<std::shared_ptr<Work>> mine;
      for (int i = 0; i < kRounds; ++i) {
        mine.push_back(WorkPool::make(pool, OpType::kAllreduce, static_cast<uint64_t>(i)));
        if (mine.size() > static_cast<size_t>(10 + t)) mine.erase(mine.begin());
      }
    });
  }
  // Works made here and released on another thread.
  std::vector<std::shared_ptr<Work>> handed;
  for (int i = 0; i < 100; ++i) handed.push_back(WorkPool::make(pool, OpType::kSend, i));
  std::thread releaser([h = std::move(handed)]() mutable { h.clear(); });
  releaser.join();
  for (auto& t : ts) t.join();
  EXPECT_EQ(pool->blocksFree(), pool->blocksMade());
}

}  // namespace
}  // namespace verbs
}  // namespace c10d
