// The Store conformance suite, part 1: the semantics of every method, in one process. Runs against
// every store (see allStoreKinds()); part 2 (store_conformance_multiproc_test.cc) covers timeouts,
// wakeups and concurrency.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/prefix_store.h"
#include "tests/store/store_fixtures.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

Bytes allByteValues() {
  Bytes b;
  for (int i = 0; i < 256; ++i) b.push_back(static_cast<uint8_t>(i));
  for (int i = 0; i < 8; ++i) b.push_back(0);
  return b;
}

TEST_P(StoreConformanceTest, SetThenGet) {
  store_->set("k", toBytes("v1"));
  EXPECT_EQ(store_->get("k"), toBytes("v1"));
  store_->set("k", std::string("overwritten"));
  EXPECT_EQ(store_->getString("k"), "overwritten");
  // Another client of the same store sees it.
  auto other = fixture_->make();
  EXPECT_EQ(other->getString("k"), "overwritten");
}

TEST_P(StoreConformanceTest, EmptyValue) {
  store_->set("empty", Bytes());
  EXPECT_TRUE(store_->check({"empty"}));
  EXPECT_EQ(store_->get("empty"), Bytes());
  store_->append("empty", Bytes());
  EXPECT_EQ(store_->get("empty"), Bytes());
}

TEST_P(StoreConformanceTest, ValuesWithNulBytes) {
  const Bytes value = allByteValues();
  store_->set("nul", value);
  EXPECT_EQ(store_->get("nul"), value);
  const Bytes zeros(100, 0);
  store_->set("zeros", zeros);
  EXPECT_EQ(fixture_->make()->get("zeros"), zeros);
}

TEST_P(StoreConformanceTest, LargeValue16MiB) {
  Bytes big(fixture_->largeValueBytes());
  uint32_t x = 12345;
  for (auto& b : big) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  store_->set("big", big);
  EXPECT_TRUE(store_->get("big") == big);
  EXPECT_TRUE(fixture_->make()->get("big") == big);
}

TEST_P(StoreConformanceTest, Add) {
  EXPECT_EQ(store_->add("counter", 5), 5);  // missing = 0
  EXPECT_EQ(store_->add("counter", 2), 7);
  EXPECT_EQ(store_->add("counter", -10), -3);
  EXPECT_EQ(store_->add("counter", 0), -3);
  EXPECT_EQ(store_->getString("counter"), "-3");
  store_->set("preset", std::string("40"));
  EXPECT_EQ(store_->add("preset", 2), 42);
  EXPECT_EQ(fixture_->make()->add("preset", 1), 43);
}

TEST_P(StoreConformanceTest, CompareSetMissingKeyEmptyExpectedSets) {
  EXPECT_EQ(store_->compareSet("cas", Bytes(), toBytes("first")), toBytes("first"));
  EXPECT_EQ(store_->getString("cas"), "first");
}

TEST_P(StoreConformanceTest, CompareSetMissingKeyNonEmptyExpectedReturnsExpected) {
  EXPECT_EQ(store_->compareSet("cas", toBytes("exp"), toBytes("des")), toBytes("exp"));
  EXPECT_FALSE(store_->check({"cas"}));
}

TEST_P(StoreConformanceTest, CompareSetMatchSetsDesired) {
  store_->set("cas", std::string("old"));
  EXPECT_EQ(store_->compareSet("cas", toBytes("old"), toBytes("new")), toBytes("new"));
  EXPECT_EQ(store_->getString("cas"), "new");
}

TEST_P(StoreConformanceTest, CompareSetMismatchReturnsCurrent) {
  store_->set("cas", std::string("current"));
  EXPECT_EQ(store_->compareSet("cas", toBytes("stale"), toBytes("new")), toBytes("current"));
  EXPECT_EQ(store_->getString("cas"), "current");
  // A present-but-empty value is not "missing": expected "" matches it.
  store_->set("empty", Bytes());
  EXPECT_EQ(store_->compareSet("empty", Bytes(), toBytes("x")), toBytes("x"));
}

TEST_P(StoreConformanceTest, Check) {
  EXPECT_TRUE(store_->check({}));
  EXPECT_FALSE(store_->check({"a"}));
  store_->set("a", std::string("1"));
  EXPECT_TRUE(store_->check({"a"}));
  EXPECT_FALSE(store_->check({"a", "b"}));
  store_->set("b", std::string("2"));
  EXPECT_TRUE(store_->check({"a", "b"}));
}

TEST_P(StoreConformanceTest, DeleteKey) {
  store_->set("d", std::string("1"));
  EXPECT_TRUE(store_->deleteKey("d"));
  EXPECT_FALSE(store_->check({"d"}));
  EXPECT_FALSE(store_->deleteKey("d"));
  EXPECT_FALSE(store_->deleteKey("never-set"));
  // A deleted key can be set again, and add restarts from 0.
  store_->set("d", std::string("2"));
  EXPECT_EQ(store_->getString("d"), "2");
  store_->deleteKey("d");
  EXPECT_EQ(store_->add("d", 1), 1);
}

TEST_P(StoreConformanceTest, GetNumKeys) {
  const int64_t base = store_->getNumKeys();
  store_->set("n1", std::string("x"));
  store_->set("n2", std::string("x"));
  store_->add("n3", 1);
  EXPECT_EQ(store_->getNumKeys(), base + 3);
  store_->set("n1", std::string("y"));  // overwrite: no new key
  EXPECT_EQ(store_->getNumKeys(), base + 3);
  store_->deleteKey("n2");
  EXPECT_EQ(store_->getNumKeys(), base + 2);
  EXPECT_EQ(fixture_->make()->getNumKeys(), base + 2);
}

TEST_P(StoreConformanceTest, Append) {
  store_->append("log", toBytes("ab"));  // creates
  store_->append("log", Bytes{0, 'c'});
  store_->append("log", toBytes("d"));
  EXPECT_EQ(store_->get("log"), (Bytes{'a', 'b', 0, 'c', 'd'}));
  store_->set("log", std::string("reset"));
  store_->append("log", toBytes("!"));
  EXPECT_EQ(store_->getString("log"), "reset!");
}

TEST_P(StoreConformanceTest, MultiSetMultiGet) {
  store_->multiSet({"m1", "m2", "m3"}, {toBytes("one"), Bytes(), Bytes{0, 1}});
  EXPECT_EQ(store_->multiGet({"m3", "m1", "m2", "m1"}),
            (std::vector<Bytes>{Bytes{0, 1}, toBytes("one"), Bytes(), toBytes("one")}));
  EXPECT_TRUE(store_->multiGet({}).empty());
  store_->multiSet({}, {});
  EXPECT_THROW(store_->multiSet({"a", "b"}, {toBytes("1")}), Error);
}

TEST_P(StoreConformanceTest, SetTimeout) {
  store_->setTimeout(Milliseconds(1234));
  EXPECT_EQ(store_->timeout(), Milliseconds(1234));
  store_->set("present", std::string("x"));
  store_->wait({"present"});  // returns at once
  EXPECT_EQ(store_->getString("present"), "x");
}

TEST_P(StoreConformanceTest, WaitOnPresentKeysReturns) {
  store_->set("w1", std::string("x"));
  store_->set("w2", std::string("y"));
  store_->wait({"w1", "w2"}, Milliseconds(100));
  store_->wait({}, Milliseconds(100));
  // A zero timeout means "present now?": returns for present keys, throws for a missing one.
  store_->wait({"w1"}, Milliseconds(0));
  EXPECT_THROW(store_->wait({"w1", "absent"}, Milliseconds(0)), TimeoutError);
}

TEST_P(StoreConformanceTest, PrefixesNeverCollide) {
  auto a = std::make_shared<PrefixStore>("a", store_);
  auto b = std::make_shared<PrefixStore>("b", store_);
  auto ab = std::make_shared<PrefixStore>("ab", store_);
  auto nested = std::make_shared<PrefixStore>("a", b);  // "b/a/..."
  a->set("k", std::string("A"));
  b->set("k", std::string("B"));
  ab->set("k", std::string("AB"));
  nested->set("k", std::string("BA"));
  store_->set("k", std::string("raw"));
  EXPECT_EQ(a->getString("k"), "A");
  EXPECT_EQ(b->getString("k"), "B");
  EXPECT_EQ(ab->getString("k"), "AB");
  EXPECT_EQ(nested->getString("k"), "BA");
  EXPECT_EQ(store_->getString("k"), "raw");
  EXPECT_EQ(b->getString("a/k"), "BA");  // nesting is path-like
  EXPECT_EQ(a->add("c", 1), 1);
  EXPECT_EQ(b->add("c", 10), 10);
  EXPECT_FALSE(ab->check({"c"}));
  EXPECT_TRUE(a->deleteKey("k"));
  EXPECT_EQ(b->getString("k"), "B");
  EXPECT_FALSE(a->check({"k"}));
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreConformanceTest, ::testing::ValuesIn(allStoreKinds()),
                         [](const ::testing::TestParamInfo<StoreKind>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
