// Gloo-specific tests (the shared behaviour is in the conformance suite): the configuration table,
// binding to an interface by name, what the backend reports it supports, and aborting a posted
// recv.
#include <cstdlib>
#include <vector>

#include "backends/gloo/config.h"
#include "c10d/registry.h"
#include "store/file_store.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
namespace test {
namespace {

TEST(GlooConfig, DefaultsEnvironmentAndOptions) {
  ::unsetenv("C10D_SOCKET_IFNAME");
  ::unsetenv("C10D_GLOO_P2P_THREADS");
  GlooConfig d = parseGlooConfig({});
  EXPECT_EQ(d.ifname, "");
  EXPECT_EQ(d.maxP2pThreads, 64);
  ::setenv("C10D_SOCKET_IFNAME", "eth7", 1);
  EXPECT_EQ(parseGlooConfig({}).ifname, "eth7");
  EXPECT_EQ(parseGlooConfig({{"ifname", "lo"}}).ifname, "lo");  // options win over env
  ::unsetenv("C10D_SOCKET_IFNAME");
  EXPECT_EQ(parseGlooConfig({{"max_p2p_threads", "3"}}).maxP2pThreads, 3);
  EXPECT_THROW(parseGlooConfig({{"max_p2p_threads", "0"}}), InvalidArgument);
  EXPECT_THROW(parseGlooConfig({{"max_p2p_threads", "x"}}), InvalidArgument);
  try {
    parseGlooConfig({{"ifnam", "lo"}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ifnam"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ifname"), std::string::npos) << e.what();
  }
  const std::string table = describeGlooConfig(d);
  for (const auto& e : glooSettings().rows()) {
    EXPECT_NE(table.find("gloo." + e.key + " = "), std::string::npos) << table;
    EXPECT_NE(table.find(e.env), std::string::npos) << table;
  }
}

TEST(GlooConfig, BindAddressFollowsMasterAddr) {
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  EXPECT_EQ(defaultGlooBindAddress(), "127.0.0.1");
  ::unsetenv("MASTER_ADDR");
  EXPECT_FALSE(defaultGlooBindAddress().empty());
}

TEST(GlooBackend, RegisteredAndSupportsEveryDefinedOpOnCpuOnly) {
  ASSERT_TRUE(isBackendRegistered("gloo"));
  EXPECT_EQ(backendInfo("gloo").priority, 10);
  const std::string path = uniqueTempPath("gloo-supports");
  expectAllRanksOk(1, [&](int rank, int size) {
    auto pg = makeGroup(conformanceBackends()[0], path, rank, size);
    EXPECT_EQ(pg->backendName(), "gloo");
    EXPECT_FALSE(pg->supportsDevice(Device::cuda(0)));
    for (DataType dt : allDataTypes()) {
      for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
        auto op = static_cast<ReduceOp::Kind>(k);
        EXPECT_EQ(pg->supports(op, dt, Device::cpu()), isDefined(op, dt));
        EXPECT_FALSE(pg->supports(op, dt, Device::cuda(0)));
      }
    }
  });
}

TEST(GlooBackend, BindsToInterfaceByName) {
  const std::string path = uniqueTempPath("gloo-ifname");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto store = std::make_shared<FileStore>(path, size, Milliseconds(30000));
    ProcessGroup::Options o;
    o.timeout = Milliseconds(30000);
    o.config["ifname"] = "lo";
    auto pg = createProcessGroup("gloo", store, rank, size, o);
    int64_t v = rank + 1;
    pg->allreduce(tensorOf(&v, 1))->wait();
    EXPECT_EQ(v, 3);
  });
}

// Work::abort() on a posted recv wakes its waiter thread, which then finishes the continuation; the
// Work must still fail with "aborted" (it once could report success for data that never came).
// Many recvs make the race between the two finishes show if it is there.
TEST(GlooBackend, AbortedRecvFailsNeverSucceeds) {
  const std::string path = uniqueTempPath("gloo-abort");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto store = std::make_shared<FileStore>(path, size, Milliseconds(30000));
    ProcessGroup::Options o;
    o.timeout = Milliseconds(30000);
    auto pg = createProcessGroup("gloo", store, rank, size, o);
    // Gloo cannot withdraw a posted recv: the buffers outlive the group.
    std::vector<int32_t> bufs(64, -1);
    for (size_t i = 0; i < bufs.size(); ++i) {
      std::shared_ptr<Work> w;
      if (rank == 0) {
        SendRecvOptions ro;
        ro.tag = 100 + static_cast<int>(i);  // nobody sends these
        w = pg->recv(tensorOf(&bufs[i], 1), 1, ro);
      }
      // Issued after the recv, the barrier completes after the worker posted it: its waiter
      // thread is waiting when abort() wakes it.
      pg->barrier()->wait();
      if (rank != 0) continue;
      w->abort();
      ASSERT_TRUE(w->isCompleted()) << "recv #" << i;
      ASSERT_FALSE(w->isSuccess()) << "aborted recv #" << i << " reported success";
      try {
        std::rethrow_exception(w->exception());
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
      }
    }
    pg->barrier()->wait();  // the group still works
    pg.reset();
    for (int32_t v : bufs) EXPECT_EQ(v, -1);
  });
}

}  // namespace
}  // namespace test
}  // namespace c10d
