// PrefixStore-specific behaviour: how keys map onto the underlying store. (Store semantics are
// checked by the conformance suite, which also runs PrefixStore over HashStore and TCPStore.)
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/prefix_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

TEST(PrefixStoreTest, KeysLandUnderPrefix) {
  auto base = std::make_shared<HashStore>();
  PrefixStore store("group1", base);
  store.set("k", std::string("v"));
  EXPECT_EQ(base->getString("group1/k"), "v");
  EXPECT_FALSE(base->check({"k"}));
  base->set("group1/other", std::string("w"));
  EXPECT_EQ(store.getString("other"), "w");
  store.multiSet({"m"}, {toBytes("x")});
  EXPECT_EQ(base->getString("group1/m"), "x");
  EXPECT_EQ(store.prefix(), "group1");
  EXPECT_EQ(store.underlying(), base);
}

TEST(PrefixStoreTest, NumKeysIsTheUnderlyingCount) {
  auto base = std::make_shared<HashStore>();
  base->set("outside", std::string("1"));
  PrefixStore store("p", base);
  store.set("inside", std::string("2"));
  EXPECT_EQ(store.getNumKeys(), 2);
  EXPECT_EQ(base->getNumKeys(), 2);
}

TEST(PrefixStoreTest, TimeoutErrorNamesPrefixedKey) {
  auto base = std::make_shared<HashStore>();
  PrefixStore store("p", base);
  store.setTimeout(Milliseconds(50));
  EXPECT_EQ(base->timeout(), Milliseconds(50));  // forwarded
  try {
    store.get("missing");
    FAIL() << "expected a TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("p/missing"), std::string::npos) << e.what();
  }
}

TEST(PrefixStoreTest, InheritsUnderlyingTimeout) {
  auto base = std::make_shared<HashStore>(Milliseconds(1234));
  PrefixStore store("p", base);
  EXPECT_EQ(store.timeout(), Milliseconds(1234));
}

TEST(PrefixStoreTest, NullStoreIsInvalid) {
  EXPECT_THROW(PrefixStore("p", nullptr), InvalidArgument);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
