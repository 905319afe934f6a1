// Tests for c10d/bootstrap/registry.h: registering, listing by priority, auto selection, unknown
// names and concurrent use.
#include "c10d/bootstrap/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/store/hash_store.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

BackendFactory fakeFactory() {
  return [](std::shared_ptr<Store> store, int rank, int size, const ProcessGroup::Options& o) {
    return std::make_shared<test::FakeProcessGroup>(std::move(store), rank, size, o);
  };
}

BackendInfo info(const std::string& name, int priority, bool available = true) {
  BackendInfo i;
  i.name = name;
  i.description = "test backend " + name;
  i.priority = priority;
  if (!available) {
    i.available = [](std::string* reason) {
      *reason = "no such device here";
      return false;
    };
  }
  return i;
}

TEST(Registry, RegisterAndCreate) {
  test::registerFakeBackend();
  EXPECT_TRUE(isBackendRegistered("fake"));
  EXPECT_FALSE(isBackendRegistered("definitely-not"));
  auto pg = createProcessGroup("fake", std::make_shared<HashStore>(), 1, 3);
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->backendName(), "fake");
  EXPECT_EQ(pg->rank(), 1);
  EXPECT_EQ(pg->size(), 3);
  EXPECT_EQ(backendInfo("fake").description, "in-test fake backend");
  EXPECT_THROW(createProcessGroup("fake", nullptr, 3, 3), InvalidArgument);
}

TEST(Registry, UnknownNameListsRegistered) {
  test::registerFakeBackend();
  try {
    createProcessGroup("nope", std::make_shared<HashStore>(), 0, 1);
    FAIL();
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown backend 'nope'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake"), std::string::npos) << msg;
  }
  EXPECT_THROW(backendInfo("nope"), InvalidArgument);
  EXPECT_THROW(registerBackend(info("", 0), fakeFactory()), InvalidArgument);
  EXPECT_THROW(registerBackend(info("auto", 0), fakeFactory()), InvalidArgument);
  EXPECT_THROW(registerBackend(info("nofactory", 0), nullptr), InvalidArgument);
}

TEST(Registry, PriorityOrderAndAutoSelection) {
  registerBackend(info("t-low", -1000), fakeFactory());
  registerBackend(info("t-high", 1999), fakeFactory());
  registerBackend(info("t-unavailable", 2000, false), fakeFactory());
  const auto names = registeredBackends();
  auto pos = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  EXPECT_LT(pos("t-unavailable"), pos("t-high"));
  EXPECT_LT(pos("t-high"), pos("t-low"));
  EXPECT_EQ(defaultBackend(), "t-high");
  auto pg = createProcessGroup("auto", std::make_shared<HashStore>(), 0, 1);
  EXPECT_EQ(pg->backendName(), "fake");  // t-high builds fake groups
  EXPECT_NE(createProcessGroup("", std::make_shared<HashStore>(), 0, 1), nullptr);
  try {
    createProcessGroup("t-unavailable", std::make_shared<HashStore>(), 0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such device here"), std::string::npos) << e.what();
  }
  // Replacing an entry changes it.
  registerBackend(info("t-high", -2000), fakeFactory());
  EXPECT_EQ(backendInfo("t-high").priority, -2000);
}

TEST(Registry, BuiltinsRegistered) {
#if C10D_HAVE_GLOO && __has_include("c10d/backends/gloo/register.h")
  EXPECT_TRUE(isBackendRegistered("gloo"));
#else
  GTEST_SKIP() << "gloo backend not built";
#endif
}

TEST(Registry, ConcurrentUse) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        registerBackend(info("t-conc" + std::to_string(t), t), fakeFactory());
        EXPECT_TRUE(isBackendRegistered("t-conc" + std::to_string(t)));
        EXPECT_FALSE(registeredBackends().empty());
        EXPECT_NE(createProcessGroup("t-conc" + std::to_string(t), nullptr, 0, 1), nullptr);
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
