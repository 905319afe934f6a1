// Tests for the store-based parts of ProcessGroup: newGroup, split and monitoredBarrier, with the
// fake backend. Ranks run as threads over one HashStore, and as forked processes over a FileStore.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/prefix_store.h"
#include "tests/common/multiproc.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using std::chrono::milliseconds;
using test::FakeProcessGroup;

// Through the registry, as init() makes groups: the registry gives the group the factory its
// sub-groups are made with (FakeProcessGroup does not override createSubgroup()).
std::shared_ptr<FakeProcessGroup> makeGroup(std::shared_ptr<Store> store, int rank, int size) {
  test::registerFakeBackend();
  ProcessGroup::Options o;
  o.timeout = milliseconds(10000);
  auto pg = std::dynamic_pointer_cast<FakeProcessGroup>(
      createProcessGroup("fake", std::move(store), rank, size, o));
  if (pg == nullptr) throw std::runtime_error("the fake backend made no FakeProcessGroup");
  return pg;
}

// Runs fn(rank) on `size` threads; exceptions become test failures naming the rank.
void runThreads(int size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&fn, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " threw: " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

// A group made without the registry, of a backend that does not override createSubgroup(), has
// no factory for sub-groups: newGroup() says so instead of guessing one by name.
TEST(Subgroups, WithoutAFactoryTheErrorSaysWhy) {
  auto pg = std::make_shared<FakeProcessGroup>(std::make_shared<HashStore>(), 0, 1,
                                               ProcessGroup::Options{});
  try {
    pg->newGroup({0});
    FAIL() << "newGroup made a sub-group without a factory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend fake cannot make sub-groups"), std::string::npos)
        << e.what();
  }
}

std::string prefixOf(const std::shared_ptr<ProcessGroup>& pg) {
  auto ps = std::dynamic_pointer_cast<PrefixStore>(pg->store());
  return ps ? ps->prefix() : std::string("<not a PrefixStore>");
}

// Checks the members of a sub-group reach each other through its store: each writes its sub-rank
// and reads everyone's.
void exchangeThroughStore(const std::shared_ptr<ProcessGroup>& sub, const std::string& tag) {
  sub->store()->set(tag + std::to_string(sub->rank()), std::to_string(sub->rank()));
  for (int r = 0; r < sub->size(); ++r) {
    EXPECT_EQ(sub->store()->getString(tag + std::to_string(r)), std::to_string(r));
  }
}

// The body shared by the thread and process variants: newGroup twice, then split.
void subgroupScenario(const std::shared_ptr<Store>& store, int rank, int size) {
  test::registerFakeBackend();
  auto pg = makeGroup(store, rank, size);
  auto g0 = pg->newGroup({3, 1});  // unsorted on purpose
  if (rank == 1 || rank == 3) {
    ASSERT_NE(g0, nullptr);
    EXPECT_EQ(g0->size(), 2);
    EXPECT_EQ(g0->rank(), rank == 1 ? 0 : 1);
    EXPECT_EQ(g0->name(), "fake:world/group0");
    EXPECT_EQ(prefixOf(g0), "group0");
    EXPECT_EQ(g0->options().timeout, milliseconds(10000));
    exchangeThroughStore(g0, "hello");
  } else {
    EXPECT_EQ(g0, nullptr);
  }
  ProcessGroup::Options named;
  named.groupName = "evens";
  std::vector<int> evens;
  for (int r = 0; r < size; r += 2) evens.push_back(r);
  auto g1 = pg->newGroup(evens, named);
  if (rank % 2 == 0) {
    ASSERT_NE(g1, nullptr);
    EXPECT_EQ(g1->name(), "fake:evens");
    EXPECT_EQ(g1->rank(), rank / 2);
    EXPECT_EQ(prefixOf(g1), "group1");
    exchangeThroughStore(g1, "x");
  }
  // split: color by parity, key reverses the order; the last rank opts out.
  const int color = rank == size - 1 ? ProcessGroup::kNoColor : rank % 2;
  auto s = pg->split(color, -rank);
  if (color == ProcessGroup::kNoColor) {
    EXPECT_EQ(s, nullptr);
    return;
  }
  ASSERT_NE(s, nullptr);
  std::vector<int> same;
  for (int r = size - 2; r >= 0; --r) {
    if (r % 2 == color) same.push_back(r);  // descending rank = ascending key
  }
  EXPECT_EQ(s->size(), static_cast<int>(same.size()));
  EXPECT_EQ(s->rank(), static_cast<int>(std::find(same.begin(), same.end(), rank) - same.begin()));
  EXPECT_EQ(prefixOf(s), "split2/color" + std::to_string(color));
  EXPECT_EQ(s->name(), "fake:world/split2/color" + std::to_string(color));
  exchangeThroughStore(s, "y");
  // A sub-group can be split again, with its own counter.
  auto ss = s->newGroup({0});
  if (s->rank() == 0) {
    ASSERT_NE(ss, nullptr);
    EXPECT_EQ(ss->size(), 1);
  } else {
    EXPECT_EQ(ss, nullptr);
  }
}

TEST(Subgroups, NewGroupAndSplitThreads) {
  auto store = std::make_shared<HashStore>(milliseconds(10000));
  runThreads(5, [&](int r) { subgroupScenario(store, r, 5); });
}

TEST(Subgroups, NewGroupAndSplitProcesses) {
  const std::string path = test::uniqueTempPath("subgroups");
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      4,
      [&](int rank, int size) {
        auto store = std::make_shared<FileStore>(path, size, milliseconds(10000));
        subgroupScenario(store, rank, size);
      },
      mo);
}

TEST(Subgroups, NewGroupValidation) {
  auto pg = makeGroup(std::make_shared<HashStore>(), 0, 4);
  EXPECT_THROW(pg->newGroup({}), InvalidArgument);
  EXPECT_THROW(pg->newGroup({0, 4}), InvalidArgument);
  EXPECT_THROW(pg->newGroup({-1}), InvalidArgument);
  try {
    pg->newGroup({1, 2, 1});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 is listed twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pg->split(-7, 0), InvalidArgument);
  auto noStore = makeGroup(nullptr, 0, 2);
  EXPECT_THROW(noStore->newGroup({0}), InvalidArgument);
  EXPECT_THROW(noStore->monitoredBarrier(), InvalidArgument);
}

TEST(Subgroups, SplitTimesOutWhenARankIsMissing) {
  auto store = std::make_shared<HashStore>();
  auto pg = makeGroup(store, 0, 2);
  ProcessGroup::Options o;
  o.timeout = milliseconds(100);
  EXPECT_THROW(pg->split(0, 0, o), TimeoutError);
}

TEST(MonitoredBarrier, AllArrive) {
  auto store = std::make_shared<HashStore>();
  runThreads(4, [&](int r) {
    auto pg = makeGroup(store, r, 4);
    for (int i = 0; i < 3; ++i) pg->monitoredBarrier(milliseconds(5000), i % 2 == 0);
  });
  auto single = makeGroup(std::make_shared<HashStore>(), 0, 1);
  EXPECT_NO_THROW(single->monitoredBarrier());
}

// Ranks 2 and 5 never arrive; rank 0 names them, the others fail fast with rank 0's message.
// Rank 0 starts its clock only once the present ranks are about to arrive, so slow thread start
// (sanitizers) cannot make a present rank look missing.
void missingRanks(bool waitAll, const std::string& expected) {
  auto store = std::make_shared<HashStore>();
  std::atomic<int> ready{0};
  runThreads(6, [&](int r) {
    if (r == 2 || r == 5) return;
    auto pg = makeGroup(store, r, 6);
    if (r == 0) {
      while (ready.load() < 3) std::this_thread::yield();
    } else {
      ++ready;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      pg->monitoredBarrier(milliseconds(1000), waitAll);
      ADD_FAILURE() << "rank " << r << ": expected TimeoutError";
    } catch (const TimeoutError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expected), std::string::npos) << "rank " << r << ": " << msg;
      if (r != 0) {
        EXPECT_NE(msg.find("rank " + std::to_string(r)), std::string::npos) << msg;
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(5000));
  });
}

TEST(MonitoredBarrier, NamesAllMissingRanks) {
  missingRanks(true, "Ranks 2, 5 failed to pass monitoredBarrier in 1000 ms (group fake:world");
}

TEST(MonitoredBarrier, NamesFirstMissingRank) {
  missingRanks(false, "Rank 2 failed to pass monitoredBarrier in 1000 ms (group fake:world");
}

// A zero timeout: rank 0 is out of time before it can wait for anyone (torch's gloo wording,
// which torch's test_monitored_barrier_gloo_rank_0_timeout matches).
TEST(MonitoredBarrier, ZeroTimeoutSaysRankZeroTimedOut) {
  auto store = std::make_shared<HashStore>();
  auto pg = makeGroup(store, 0, 2);
  try {
    pg->monitoredBarrier(milliseconds(0));
    FAIL();
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Rank 0 timed out in monitoredBarrier after "), std::string::npos) << msg;
    EXPECT_NE(msg.find("Rank 1 failed to pass monitoredBarrier in 0 ms"), std::string::npos) << msg;
  }
}

TEST(MonitoredBarrier, NonZeroRankTimesOutWithoutRankZero) {
  auto store = std::make_shared<HashStore>();
  auto pg = makeGroup(store, 1, 2);
  try {
    pg->monitoredBarrier(milliseconds(100));
    FAIL();
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("no release from rank 0 within 200 ms"), std::string::npos)
        << e.what();
  }
}

TEST(MonitoredBarrier, ProcessesWithOneRankMissing) {
  const std::string path = test::uniqueTempPath("mbarrier");
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      4,
      [&](int rank, int size) {
        auto store = std::make_shared<FileStore>(path, size, milliseconds(10000));
        auto pg = makeGroup(store, rank, size);
        pg->monitoredBarrier(milliseconds(5000), true);  // everyone arrives
        if (rank == 3) return;
        try {
          pg->monitoredBarrier(milliseconds(1000), true);
          ADD_FAILURE() << "expected TimeoutError";
        } catch (const TimeoutError& e) {
          EXPECT_NE(std::string(e.what()).find("Rank 3 failed to pass monitoredBarrier"),
                    std::string::npos)
              << e.what();
        }
      },
      mo);
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
