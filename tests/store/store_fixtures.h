// Test helpers for the Store conformance suite: one StoreFixture per Store implementation, and
// runParallel(), which runs a function on N ranks as real processes (stores shared through a file
// or a server) or, for the in-process HashStore, as threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// Default timeout of the stores the fixtures make: long enough for 8 contending processes under
// sanitizers on 2 cores, short enough that a broken test fails instead of hanging.
constexpr Milliseconds kStoreTestTimeout{30000};

// Everything one test needs for one kind of store: the parent sets it up (a temp file, a server
// process), then make() returns a fresh client of that one store, in any process or thread.
class StoreFixture {
 public:
  virtual ~StoreFixture() = default;
  // A new client (or, for HashStore, a view of the one in-process store).
  virtual std::shared_ptr<Store> make() = 0;
  // True when clients in forked processes share the store; false for HashStore (ranks are threads).
  virtual bool sharedAcrossProcesses() const { return true; }
  // Operations per rank in the contended add / compareSet tests, and the size of the large value:
  // smaller for a store whose every write is a consensus round (etcd), to keep the suite fast.
  virtual int contendedOpsPerRank() const { return 1000; }
  virtual size_t largeValueBytes() const { return 16 << 20; }
};

struct StoreKind {
  std::string name;  // a valid GoogleTest name ("FileStore", "PrefixOverTCPStore", ...)
  std::function<std::unique_ptr<StoreFixture>()> create;
  // When set and it returns a reason, the kind's tests skip with it (e.g. no etcd binary here).
  std::function<std::string()> skipReason;
};
void PrintTo(const StoreKind& kind, std::ostream* os);

// HashStore, PrefixStore over HashStore, FileStore, TCPStore, PrefixStore over TCPStore,
// TCPStore with a shared secret (every connection authenticated), and, where their libraries were
// built, EtcdStore and RedisStore against a server of their own per test (store_servers.h).
std::vector<StoreKind> allStoreKinds();

// Runs fn(rank, size, store) on `size` ranks, each with its own client from fixture.make():
// forked processes (through multiproc.h, with a deadline) or threads, as the fixture allows.
// Records a GoogleTest failure for every rank that failed, threw or hung.
void runParallel(StoreFixture& fixture, int size,
                 const std::function<void(int rank, int size, Store& store)>& fn);

// The conformance suite: every TEST_P(StoreConformanceTest, ...) runs once per StoreKind, with a
// fresh store (new file, new server) per test.
class StoreConformanceTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam().skipReason) {
      const std::string reason = GetParam().skipReason();
      if (!reason.empty()) GTEST_SKIP() << reason;
    }
    fixture_ = GetParam().create();
    store_ = fixture_->make();
  }
  void TearDown() override {
    store_.reset();
    fixture_.reset();
  }

  std::unique_ptr<StoreFixture> fixture_;
  std::shared_ptr<Store> store_;  // a client in the test process
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
