// The Store conformance suite, part 2: timeouts, wakeups across processes, and atomicity of add,
// compareSet and append under contention from 8 processes (threads for the in-process HashStore).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/store/store_fixtures.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr Milliseconds kShortTimeout{200};
// Upper slack on how late a timeout may fire: sanitizers on a loaded 2-core machine are slow.
constexpr Milliseconds kTimeoutSlack{3000};
constexpr int kRanks = 8;

Milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<Milliseconds>(Clock::now() - start);
}

// Runs `op`, which must throw TimeoutError after about kShortTimeout; checks the message names
// every one of `names`.
template <typename Op>
void expectTimeout(Op op, const std::vector<std::string>& names) {
  const auto start = Clock::now();
  try {
    op();
    ADD_FAILURE() << "expected a TimeoutError";
  } catch (const TimeoutError& e) {
    const auto elapsed = since(start);
    EXPECT_GE(elapsed.count(), kShortTimeout.count()) << e.what();
    EXPECT_LT(elapsed.count(), (kShortTimeout + kTimeoutSlack).count()) << e.what();
    const std::string msg = e.what();
    for (const auto& name : names) EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(kShortTimeout.count()) + " ms"), std::string::npos)
        << "message should name the timeout: " << msg;
  }
}

TEST_P(StoreConformanceTest, GetMissingKeyTimesOut) {
  store_->setTimeout(kShortTimeout);
  expectTimeout([&] { store_->get("no-such-key"); }, {"no-such-key"});
}

TEST_P(StoreConformanceTest, WaitMissingKeyTimesOut) {
  store_->set("present", std::string("x"));
  expectTimeout([&] { store_->wait({"present", "missing-key"}, kShortTimeout); }, {"missing-key"});
  // Without an explicit timeout, wait uses the store's.
  store_->setTimeout(kShortTimeout);
  expectTimeout([&] { store_->wait({"other-missing"}); }, {"other-missing"});
}

TEST_P(StoreConformanceTest, DeletedKeyTimesOut) {
  store_->set("gone", std::string("x"));
  store_->deleteKey("gone");
  store_->setTimeout(kShortTimeout);
  expectTimeout([&] { store_->get("gone"); }, {"gone"});
}

TEST_P(StoreConformanceTest, SetByAnotherRankWakesGetAndWait) {
  runParallel(*fixture_, 3, [](int rank, int, Store& store) {
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      store.set("wake-get", std::string("hello"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      store.set("wake-a", std::string("a"));
      store.set("wake-b", std::string("b"));
      return;
    }
    const auto start = Clock::now();
    if (rank == 0) {
      EXPECT_EQ(store.getString("wake-get"), "hello");
    } else {
      store.wait({"wake-a", "wake-b"}, Milliseconds(20000));
      EXPECT_EQ(store.getString("wake-b"), "b");
    }
    EXPECT_LT(since(start).count(), 20000);
  });
}

TEST_P(StoreConformanceTest, EveryRankSeesEveryRanksKey) {
  runParallel(*fixture_, kRanks, [](int rank, int size, Store& store) {
    store.set("rank" + std::to_string(rank), std::string(static_cast<size_t>(rank + 1), 'r'));
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(store.getString("rank" + std::to_string(r)),
                std::string(static_cast<size_t>(r + 1), 'r'));
    }
  });
  EXPECT_GE(store_->getNumKeys(), kRanks);
}

TEST_P(StoreConformanceTest, ConcurrentAddIsExact) {
  const int kOpsPerRank = fixture_->contendedOpsPerRank();
  runParallel(*fixture_, kRanks, [kOpsPerRank](int, int, Store& store) {
    int64_t last = 0;
    for (int i = 0; i < kOpsPerRank; ++i) {
      const int64_t v = store.add("add-counter", 1);
      ASSERT_GT(v, last);  // monotonic as seen by one client
      ASSERT_LE(v, kRanks * kOpsPerRank);
      last = v;
    }
  });
  EXPECT_EQ(store_->add("add-counter", 0), kRanks * kOpsPerRank);
  EXPECT_EQ(store_->getString("add-counter"), std::to_string(kRanks * kOpsPerRank));
}

// compareSet as a lock-free counter: read, compareSet(old, old + 1), retry on a mismatch. Values
// are "count:rank:op" so a success is never confused with another rank's equal write (ABA).
TEST_P(StoreConformanceTest, ConcurrentCompareSetCounterIsExact) {
  const int kOpsPerRank = fixture_->contendedOpsPerRank();
  store_->set("cas-counter", std::string("0:init"));
  runParallel(*fixture_, kRanks, [kOpsPerRank](int rank, int, Store& store) {
    Bytes current = store.get("cas-counter");
    for (int i = 0; i < kOpsPerRank; ++i) {
      while (true) {
        const std::string s = toString(current);
        const long n = std::stol(s.substr(0, s.find(':')));
        const Bytes desired =
            toBytes(std::to_string(n + 1) + ":" + std::to_string(rank) + ":" + std::to_string(i));
        Bytes got = store.compareSet("cas-counter", current, desired);
        if (got == desired) {
          current = desired;
          break;
        }
        current = std::move(got);  // someone else won: retry from the value they wrote
      }
    }
  });
  const std::string final = store_->getString("cas-counter");
  EXPECT_EQ(final.substr(0, final.find(':')), std::to_string(kRanks * kOpsPerRank)) << final;
}

// append is atomic: every rank's chunks all land, whole, in that rank's order.
TEST_P(StoreConformanceTest, ConcurrentAppendKeepsEveryChunk) {
  constexpr int kAppends = 100;
  runParallel(*fixture_, kRanks, [](int rank, int, Store& store) {
    for (int i = 0; i < kAppends; ++i) {
      store.append("append-log", Bytes{static_cast<uint8_t>(rank), static_cast<uint8_t>(i), 0});
    }
  });
  const Bytes log = store_->get("append-log");
  ASSERT_EQ(log.size(), static_cast<size_t>(kRanks * kAppends * 3));
  std::vector<int> next(kRanks, 0);
  for (size_t pos = 0; pos < log.size(); pos += 3) {
    const int rank = log[pos];
    ASSERT_LT(rank, kRanks);
    EXPECT_EQ(log[pos + 1], next[rank]++) << "rank " << rank << " at byte " << pos;
    EXPECT_EQ(log[pos + 2], 0);
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(next[r], kAppends) << "rank " << r;
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
