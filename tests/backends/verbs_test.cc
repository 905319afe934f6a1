// Verbs-backend-specific tests: the device-free pieces (config and algorithm tables, ibverbs
// address exchange, ring chunking, the registration cache), the shm workspace leaving nothing in
// /dev/shm, every algorithm variant and the tcp transport through the conformance sweep, and a
// killed rank turning into CommError on the others. The shared conformance suite covers the
// default (shm) configuration; the collective engine's own cases are in verbs_engine_test.cc.
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/backends/verbs/collective_engine.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/fault_hooks.h"
#include "c10d/backends/verbs/fiber.h"
#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/ibverbs/ib_addr.h"
#include "c10d/backends/verbs/transport/ibverbs/ib_transport.h"
#include "c10d/backends/verbs/transport/ibverbs/mr_cache.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/base/abi.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "tests/backends/conformance.h"
#include "tests/backends/verbs_test_util.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

using test::expectAllRanksOk;
using test::uniqueTempPath;

std::shared_ptr<ProcessGroupVerbs> makeVerbs(const std::string& path, int rank, int size,
                                             std::map<std::string, std::string> config,
                                             Milliseconds timeout) {
  auto store = std::make_shared<FileStore>(path, size);
  ProcessGroup::Options o;
  o.timeout = timeout;
  o.config = std::move(config);
  return std::make_shared<ProcessGroupVerbs>(store, rank, size, o);
}

__attribute__((noinline)) std::thread::id currentThread() {
  std::thread::id id = std::this_thread::get_id();
  asm volatile("" : : "r"(&id) : "memory");
  return id;
}

void sweepWith(int size, std::map<std::string, std::string> config, std::vector<size_t> counts) {
  const std::string path = uniqueTempPath("verbs-sweep");
  test::BackendParam p;
  p.backend = "verbs";
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(100);
  expectAllRanksOk(
      size,
      [&](int rank, int n) {
        auto pg = makeVerbs(path, rank, n, config);
        if (config.count("C10D_TRANSPORT")) {
          EXPECT_EQ(pg->transportName(), config["C10D_TRANSPORT"]);
        }
        test::SweepOptions o;
        o.counts = counts;
        test::runSweep(*pg, p, o);
      },
      mp);
}

namespace {

TEST(VerbsConfig, ParsesAndRejects) {
  VerbsConfig c = VerbsConfig::load({{"C10D_TRANSPORT", "tcp"},
                                     {"C10D_SHM_CHUNK", "64K"},
                                     {"C10D_ALGO", "allreduce:ring,broadcast:chain"}});
  EXPECT_EQ(c.transport, "tcp");
  EXPECT_EQ(c.shmChunkBytes, 64u << 10);
  EXPECT_THROW(VerbsConfig::load({{"C10D_TRANSPORT", "udp"}}), InvalidArgument);
  EXPECT_THROW(VerbsConfig::load({{"C10D_SHM_RING", "5000"}}), InvalidArgument);
  EXPECT_THROW(VerbsConfig::load({{"C10D_ALGO", "allreduce:chain"}}), InvalidArgument);
  EXPECT_THROW(VerbsConfig::load({{"C10D_ALGO", "allreduce"}}), InvalidArgument);
  EXPECT_THROW(VerbsConfig::load({{"C10D_ALGO", "bogus:ring"}}), InvalidArgument);
  const VerbsConfig in = VerbsConfig::load({{"C10D_INLINE_BYTES", "4K"}, {"C10D_INLINE_US", "0"}});
  EXPECT_EQ(in.inlineBytes, 4096u);
  EXPECT_EQ(in.inlineUs, 0);
  EXPECT_EQ(VerbsConfig::load({}).inlineBytes, 1u << 20);
  EXPECT_EQ(VerbsConfig::load({}).inlineUs, 100);
  EXPECT_EQ(VerbsConfig::load({{"C10D_INLINE_US", "-1"}}).inlineUs, -1);  // never hand off
  try {
    VerbsConfig::load({{"C10D_INLINE_US", "-2"}});
    ADD_FAILURE() << "C10D_INLINE_US=-2 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("C10D_INLINE_US='-2' is not an integer in [-1, 1000000]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(VerbsConfig::load({{"C10D_INLINE_BYTES", "lots"}}), InvalidArgument);
  EXPECT_EQ(VerbsConfig::load({{"C10D_SHM_RING", "1MiB"}}).shmRingBytes, 1u << 20);
  ::setenv("C10D_SHM_CHUNK", "128K", 1);  // the environment when the options do not say
  EXPECT_EQ(VerbsConfig::load({}).shmChunkBytes, 128u << 10);
  EXPECT_EQ(VerbsConfig::load({{"C10D_SHM_CHUNK", "8K"}}).shmChunkBytes, 8u << 10);
  ::unsetenv("C10D_SHM_CHUNK");
  std::ostringstream os;
  printConfig(os, c);
  EXPECT_NE(os.str().find("C10D_TRANSPORT"), std::string::npos);
  EXPECT_NE(os.str().find("override: 0-inf -> ring"), std::string::npos);
}

// The waits' automatic settings: a long sched_yield phase and some pure polling only where the
// host's ranks (the group's, or the launcher's LOCAL_WORLD_SIZE when larger) fit the CPUs.
TEST(VerbsConfig, SpinAndBusyAutoFollowRanksPerCpu) {
  EXPECT_EQ(resolveSpinUs(5, 1 << 20), 5);
  EXPECT_EQ(resolveSpinUs(-1, 1), 20000);
  EXPECT_EQ(resolveSpinUs(-1, 1 << 20), 60);
  EXPECT_EQ(resolveBusyUs(0, 1), 0);
  EXPECT_EQ(resolveBusyUs(-1, 1), 20);
  EXPECT_EQ(resolveBusyUs(-1, 1 << 20), 0);
  const char* vars[] = {"RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"};
  for (const char* v : vars) unsetenv(v);
  EXPECT_EQ(ranksOnThisHost(2), 2);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "16", 1);
  setenv("LOCAL_WORLD_SIZE", "8", 1);
  EXPECT_EQ(ranksOnThisHost(2), 8) << "a sub-group competes with every rank of its host";
  EXPECT_EQ(ranksOnThisHost(12), 12);
  setenv("LOCAL_WORLD_SIZE", "eight", 1);
  EXPECT_EQ(ranksOnThisHost(2), 2) << "a malformed variable falls back to the group's count";
  for (const char* v : vars) unsetenv(v);
}

// The ranks that compete for this process's CPUs, whatever host they say they are on: the same
// kernel (boot id) and overlapping affinity masks.
TEST(VerbsConfig, RanksSharingCpusCountsOtherHostsOfThisMachine) {
  const std::string mine = cpuShareKey();
  ASSERT_EQ(mine.rfind(bootId() + " ", 0), 0u) << mine;
  EXPECT_FALSE(bootId().empty());
  // Four ranks of this process's key: two "hosts" of two on one machine compete for its CPUs.
  EXPECT_EQ(ranksSharingCpus({mine, mine, mine, mine}, 2), 4);
  const std::string boot = "0e7c9a53-1111-2222-3333-444455556666";
  const std::vector<std::string> keys = {
      boot + " 3",                    // CPUs 0, 1
      boot + " 2",                    // CPU 1: overlaps rank 0
      boot + " c",                    // CPUs 2, 3: pinned apart
      boot + " 0,1",                  // CPU 64 only
      boot + " 0,3",                  // CPUs 64, 65: overlaps rank 3
      "another " + std::string("3"),  // another machine
      boot + " zz",                   // malformed: not counted
      "",                             // malformed
  };
  EXPECT_EQ(ranksSharingCpus(keys, 0), 2);
  EXPECT_EQ(ranksSharingCpus(keys, 1), 2);
  EXPECT_EQ(ranksSharingCpus(keys, 2), 1);
  EXPECT_EQ(ranksSharingCpus(keys, 3), 2);
  EXPECT_EQ(ranksSharingCpus(keys, 5), 1);
  EXPECT_EQ(ranksSharingCpus(keys, 6), 1) << "a rank whose own key is malformed counts itself";
  EXPECT_EQ(ranksSharingCpus(keys, 7), 1);
}

TEST(VerbsConfig, ShmChunkAutoFollowsRanksPerCpu) {
  EXPECT_EQ(VerbsConfig::load({}).shmChunkBytes, 0u) << "the default is auto";
  EXPECT_EQ(resolveShmChunkBytes(64 << 10, 1 << 20), 64u << 10);
  EXPECT_EQ(resolveShmChunkBytes(0, 1), 256u << 10);
  EXPECT_EQ(resolveShmChunkBytes(0, 1 << 20), 512u << 10);
}

// The ranks of a host lay out one workspace: a rank left at auto takes the first rank's slot size
// (and the collectives over it are right); an explicit C10D_SHM_CHUNK or C10D_SHM_RING that
// differs from the first rank's is refused on that rank, naming the setting and both values.
TEST(VerbsShm, RanksAgreeOnTheWorkspaceLayout) {
  const std::string ok = uniqueTempPath("verbs-layout");
  expectAllRanksOk(3, [&](int rank, int size) {
    std::map<std::string, std::string> cfg;
    if (rank == 0) cfg["C10D_SHM_CHUNK"] = "8K";
    if (rank == 2) cfg["C10D_SHM_CHUNK"] = "8192";
    auto pg = makeVerbs(ok, rank, size, cfg);
    std::vector<float> x(100003);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rank + 1) * (i % 97);
    pg->allreduce(tensorOf(x.data(), x.size()))->wait();
    for (size_t i = 0; i < x.size(); i += 997) ASSERT_EQ(x[i], 6.0f * (i % 97)) << "element " << i;
  });
  struct Case {
    std::string key, value, named;
  };
  for (const Case& c : {Case{"C10D_SHM_CHUNK", "64K", "C10D_SHM_CHUNK=65536 (65536-byte"},
                        Case{"C10D_SHM_RING", "65536", "C10D_SHM_RING=65536 but"}}) {
    const std::string path = uniqueTempPath("verbs-layout-bad");
    expectAllRanksOk(2, [&](int rank, int size) {
      if (rank == 0) {
        try {  // its peer refuses the workspace: whatever rank 0 sees, it must not hang
          makeVerbs(path, rank, size, {{"C10D_SHM_CHUNK", "128K"}}, Milliseconds(3000));
        } catch (const std::exception&) {
        }
        return;
      }
      test::expectThrowsWith<InvalidArgument>(
          [&] {
            makeVerbs(path, rank, size, {{c.key, c.value}}, Milliseconds(3000));
          },
          {"rank 1", c.named});
    });
  }
}

// The engine's fiber: a task that completes at once, one that suspends and is resumed on another
// thread (as a hand-off does), an exception rethrown where the task's last part ran, reuse.
TEST(VerbsFiber, RunsSuspendsMovesThreadsAndRethrows) {
  Fiber f(64 << 10);
  struct State {
    Fiber* f;
    std::vector<std::thread::id> where;
    int steps = 0;
  } st{&f, {}, 0};
  EXPECT_TRUE(f.start([](void* a) { static_cast<State*>(a)->steps = 1; }, &st));
  EXPECT_EQ(st.steps, 1);
  EXPECT_FALSE(f.busy());
  auto twoPart = [](void* a) {
    auto* s = static_cast<State*>(a);
    s->where.push_back(currentThread());
    s->f->suspend();
    s->where.push_back(currentThread());
    s->steps = 2;
  };
  EXPECT_FALSE(f.start(twoPart, &st));
  EXPECT_TRUE(f.busy());
  EXPECT_EQ(st.steps, 1);
  bool done = false;
  std::thread other([&] { done = f.resume(); });
  other.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(st.steps, 2);
  ASSERT_EQ(st.where.size(), 2u);
  EXPECT_EQ(st.where[0], std::this_thread::get_id());
  EXPECT_NE(st.where[1], std::this_thread::get_id());
  auto throwsAfterSuspend = [](void* a) {
    static_cast<State*>(a)->f->suspend();
    C10D_THROW(CommError, "peer gone");
  };
  EXPECT_FALSE(f.start(throwsAfterSuspend, &st));
  try {
    f.resume();
    ADD_FAILURE() << "the task's exception was not rethrown";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("peer gone"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(f.busy());
  EXPECT_THROW(f.resume(), Error);  // nothing inside
  EXPECT_TRUE(f.start([](void* a) { static_cast<State*>(a)->steps = 3; }, &st));
  EXPECT_EQ(st.steps, 3);
}

TEST(VerbsHostLayout, FromHostIds) {
  const HostLayout l = HostLayout::fromHostIds({"x", "y", "x", "y", "x", "y"});
  ASSERT_EQ(l.hosts.size(), 2u);
  EXPECT_EQ(l.hosts[0], (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(l.hosts[1], (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(l.hostOf, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(l.multiHost);
  EXPECT_TRUE(l.balanced);
  const HostLayout uneven = HostLayout::fromHostIds({"x", "x", "y"});
  EXPECT_TRUE(uneven.multiHost);
  EXPECT_FALSE(uneven.balanced);
  const HostLayout apart = HostLayout::fromHostIds({"x", "y", "z"});  // nothing to share
  EXPECT_FALSE(apart.multiHost);
  EXPECT_FALSE(apart.balanced);
  const HostLayout one = HostLayout::fromHostIds({"x", "x"});  // one host: the shm workspace
  EXPECT_FALSE(one.multiHost);
  EXPECT_FALSE(one.balanced);
}

TEST(VerbsIbAddress, EncodeDecodeRoundTrip) {
  IbAddress a;
  a.lid = 0xbeef;
  a.qpn = 0x123456;
  a.psn = 0xabcdef;
  for (int i = 0; i < 16; ++i) a.gid[i] = static_cast<uint8_t>(i * 17);
  a.ringAddr = 0x7fff12345678ull;
  a.ringRkey = 42;
  a.ringBytes = 1 << 18;
  a.creditAddr = 0x7fff00001000ull;
  a.creditRkey = 7;
  EXPECT_EQ(decodeIbAddress(encodeIbAddress(a)), a);
  EXPECT_THROW(decodeIbAddress("garbage"), Error);
  EXPECT_THROW(decodeIbAddress(encodeIbAddress(a) + "x"), Error);
}

TEST(VerbsIbAddress, ExchangeThroughStore) {
  // Ranks as threads over one HashStore: rank r's endpoint facing q has qpn r*100+q+ch.
  constexpr int kSize = 3;
  auto store = std::make_shared<HashStore>();
  std::vector<std::vector<std::vector<IbAddress>>> got(kSize);
  std::vector<std::thread> threads;
  for (int r = 0; r < kSize; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::vector<IbAddress>> mine(kSize, std::vector<IbAddress>(2));
      for (int q = 0; q < kSize; ++q)
        for (int ch = 0; ch < 2; ++ch) mine[q][ch].qpn = r * 100 + q * 10 + ch;
      got[r] = exchangeIbAddresses(*store, r, kSize, mine, Milliseconds(5000));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kSize; ++r) {
    for (int q = 0; q < kSize; ++q) {
      if (q == r) continue;
      for (int ch = 0; ch < 2; ++ch) {
        EXPECT_EQ(got[r][q][ch].qpn, static_cast<uint32_t>(q * 100 + r * 10 + ch))
            << "rank " << r << " peer " << q;
      }
    }
  }
}

TEST(VerbsIbAddress, RingPiecesNeverWrapOrExceed) {
  auto p = ringPieces(1000, 300, 1024, 128);
  size_t total = 0;
  for (const auto& x : p) {
    EXPECT_LE(x.offset + x.len, 1024u);
    EXPECT_LE(x.len, 128u);
    EXPECT_EQ(x.srcOffset, total);
    total += x.len;
  }
  EXPECT_EQ(total, 300u);
  EXPECT_EQ(p[0].offset, 1000u);
  EXPECT_EQ(p[0].len, 24u);
  EXPECT_EQ(p[1].offset, 0u);
  EXPECT_TRUE(ringPieces(5, 0, 1024, 128).empty());
}

TEST(VerbsMrCache, HitsMissesEvictionAndInvalidate) {
  int live = 0, regs = 0;
  {
    MrCache cache(
        [&](void*, size_t) {
          ++live;
          ++regs;
          MrRegion r;
          r.lkey = static_cast<uint32_t>(regs);
          return r;
        },
        [&](const MrRegion&) { --live; }, 2, 4096);
    // Page-aligned, non-adjacent pieces of one buffer, so regions cannot overlap by accident.
    std::vector<uint8_t> mem(16 * 4096);
    uint8_t* base =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 4095) / 4096 * 4096);
    struct Span {
      uint8_t* p;
      size_t n;
      uint8_t* data() const { return p; }
      size_t size() const { return n; }
    } a{base, 3 * 4096}, b{base + 5 * 4096, 4096}, c{base + 9 * 4096, 4096};
    const MrRegion& r1 = cache.get(a.data() + 10, 100);
    EXPECT_TRUE(r1.covers(reinterpret_cast<uintptr_t>(a.data() + 10), 100));
    EXPECT_EQ(r1.begin % 4096, 0u);
    cache.get(a.data() + 20, 50);  // covered: hit
    EXPECT_EQ(cache.hits(), 1u);
    EXPECT_EQ(cache.misses(), 1u);
    cache.get(b.data(), b.size());
    cache.get(c.data(), c.size());  // third region: evicts the least recently used (a)
    EXPECT_EQ(cache.evictions(), 1u);
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(live, 2);
    cache.invalidate(c.data(), 1);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(live, 1);
  }
  EXPECT_EQ(live, 0);  // the destructor deregistered the rest
}

// RDMA writes read a registered region until their completion is polled: ib_transport pins the
// region of every write and unpins it at its completion. A pinned region is neither evicted nor
// deregistered by invalidate() until then; the cache may exceed its size meanwhile.
TEST(VerbsMrCache, PinnedRegionsStayRegisteredUntilUnpinned) {
  std::set<uint32_t> live;
  uint32_t regs = 0;
  MrCache cache(
      [&](void*, size_t) {
        MrRegion r;
        r.lkey = ++regs;
        live.insert(r.lkey);
        return r;
      },
      [&](const MrRegion& r) { EXPECT_EQ(live.erase(r.lkey), 1u) << "deregistered twice"; }, 2,
      4096);
  std::vector<uint8_t> mem(16 * 4096);
  uint8_t* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 4095) / 4096 * 4096);
  uint8_t* a = base;
  uint8_t* b = base + 3 * 4096;
  uint8_t* c = base + 6 * 4096;
  uint8_t* d = base + 9 * 4096;

  const MrRegion& pa = cache.pin(a, 100);  // an RDMA write from a is in flight
  const uint32_t aKey = pa.lkey;
  cache.get(b, 100);
  cache.get(c, 100);
  cache.get(d, 100);  // a is the least recently used: evicted, were it not pinned
  EXPECT_EQ(live.count(aKey), 1u) << "a pinned region was deregistered under an RDMA write";
  EXPECT_EQ(cache.get(a, 10).lkey, aKey);  // still cached
  cache.invalidate(a, 1);                  // the memory is being freed, but the write still reads
  EXPECT_EQ(live.count(aKey), 1u) << "invalidate deregistered a pinned region";
  EXPECT_NE(cache.get(a, 10).lkey, aKey) << "an invalidated region was handed out again";
  cache.unpin(pa);  // the write's completion was polled
  EXPECT_EQ(live.count(aKey), 0u) << "an invalidated region outlived its last pin";
  EXPECT_LE(cache.size(), 2u);

  // Everything pinned: the cache grows past its size, and shrinks back as pins are released.
  const MrRegion& p1 = cache.pin(b, 100);
  const uint32_t k1 = p1.lkey;
  const MrRegion& p2 = cache.pin(c, 100);
  const MrRegion& p3 = cache.pin(d, 100);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(live.size(), 3u);
  cache.unpin(p1);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(live.count(k1), 0u);
  cache.unpin(p2);
  cache.unpin(p3);
  EXPECT_EQ(live.size(), 2u);
}

TEST(VerbsIbverbs, DeviceOrSkip) {
  std::string why;
  if (!ibDeviceAvailable(VerbsConfig::load(), &why)) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "ibverbs transport not testable here: " << why;
  }
  const std::string path = uniqueTempPath("verbs-ib");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_TRANSPORT", "ibverbs"}});
    EXPECT_EQ(pg->transportName(), "ibverbs");
    std::vector<float> x(100000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((rank + 1) * (i % 1000));
    pg->allreduce(tensorOf(x.data(), x.size()))->wait();
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i], 3.0f * static_cast<float>(i % 1000)) << "element " << i;
    }
  });
}

TEST(VerbsIbverbs, ForcedWithoutDeviceSaysWhy) {
  std::string why;
  if (ibDeviceAvailable(VerbsConfig::load(), &why)) GTEST_SKIP() << "a device is present";
  auto store = std::make_shared<HashStore>();
  ProcessGroup::Options o;
  o.config = {{"C10D_TRANSPORT", "ibverbs"}};
  // Names the rank, the setting and why (the probe's own reason).
  test::expectThrowsWith<InvalidArgument>([&] { ProcessGroupVerbs pg(store, 0, 1, o); },
                                          {"verbs: rank 0: C10D_TRANSPORT=ibverbs but " + why});
}

TEST(VerbsShm, WorkspaceUnlinkedAfterSetup) {
  const std::string path = uniqueTempPath("verbs-shm");
  expectAllRanksOk(3, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {});
    EXPECT_EQ(pg->transportName(), "shm");
    pg->barrier()->wait();
    if (rank == 0) {
      const std::string prefix = "c10d-verbs-" + std::to_string(getpid()) + "-";
      DIR* d = opendir("/dev/shm");
      ASSERT_NE(d, nullptr);
      while (dirent* e = readdir(d))
        EXPECT_NE(std::string(e->d_name).rfind(prefix, 0), 0u) << e->d_name << " left behind";
      closedir(d);
    }
  });
}

// A rank that finds in the store the name of a workspace laid out for another group (another
// size; here a group of 2 made earlier with the same store prefix, as a job restarted on a kept
// store can) must refuse it at setup: mapping it and touching past its end was a SIGBUS
// mid-collective (found by the c10d_api fuzzer, regress-8c86fe9c...).
TEST(VerbsShm, WorkspaceOfAnotherSizeIsRefused) {
  HashStore store;
  VerbsConfig cfg;
  const std::vector<int> pids(3, static_cast<int>(getpid()));
  ShmTransport first(store, 0, 2, {pids[0], pids[1]}, cfg, Milliseconds(2000));
  try {
    ShmTransport other(store, 2, 3, pids, cfg, Milliseconds(2000));
    FAIL() << "a rank of 3 mapped the workspace of a group of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 of 3 expects a workspace of"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("disagree on the group"), std::string::npos) << e.what();
  }
}

// A /dev/shm too small for the workspace (a container's default 64 MB) is an error at setup
// naming the sizes, not a SIGBUS at the first touch of a page tmpfs cannot allocate. Runs in a
// child with a mount namespace of its own and a 1 MiB tmpfs on /dev/shm (needs root).
TEST(VerbsShm, DevShmTooSmallIsAnErrorAtSetup) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to mount a small tmpfs on /dev/shm";
  constexpr int kNoMountNamespace = 77;
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::milliseconds(30000);
  const auto results = test::runRanks(
      1,
      [](int, int) {
        if (unshare(CLONE_NEWNS) != 0 ||
            mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0) {
          std::fprintf(stderr, "no mount namespace: %s\n", std::strerror(errno));
          _exit(kNoMountNamespace);
        }
        HashStore store;
        try {
          ShmTransport t(store, 0, 2, {getpid(), getpid()}, VerbsConfig{}, Milliseconds(2000));
          ADD_FAILURE() << "no error";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("bytes of /dev/shm but it has 1048576 free"),
                    std::string::npos)
              << e.what();
        }
      },
      mp);
  ASSERT_EQ(results.size(), 1u);
  if (results[0].exited && results[0].exitCode == kNoMountNamespace) {
    GTEST_SKIP() << "no mount namespace (the child's stderr says why)";
  }
  EXPECT_TRUE(results[0].ok()) << results[0].describe();
}

TEST(VerbsTcp, Sweep2) {
  sweepWith(2, {{"C10D_TRANSPORT", "tcp"}}, {0, 1, 7, 70001});
}
TEST(VerbsTcp, Sweep3) {
  sweepWith(3, {{"C10D_TRANSPORT", "tcp"}}, {0, 1, 7, 70001});
}
TEST(VerbsTcp, Sweep4RecursiveDoublingFold) {
  sweepWith(4, {{"C10D_TRANSPORT", "tcp"}, {"C10D_ALGO", "allreduce:recursive_doubling"}}, {5, 33});
}

TEST(VerbsShmAlgos, RingAndChainOverShmStreams) {
  sweepWith(3, {{"C10D_ALGO", "allreduce:ring,broadcast:chain,barrier:dissemination"}},
            {1, 7, 65537});
}
// Single-copy sends (C10D_SHM_CMA, off by default) forced on from 4 KiB: the conformance sweep
// (every collective, send/recv included) over them with the stream algorithms, and proof that
// the path was taken.
TEST(VerbsShmCma, SweepOverSingleCopySends) {
  const std::string path = uniqueTempPath("verbs-cma");
  test::BackendParam p;
  p.backend = "verbs";
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(100);
  expectAllRanksOk(
      3,
      [&](int rank, int n) {
        auto pg =
            makeVerbs(path, rank, n,
                      {{"C10D_SHM_CMA", "4096"}, {"C10D_ALGO", "allreduce:ring,broadcast:chain"}});
        test::SweepOptions o;
        o.counts = {1, 7, 65537};
        test::runSweep(*pg, p, o);
        pg->barrier()->wait();
        EXPECT_GT(shmSingleCopySendsForTesting(*pg), 0u) << "rank " << rank;
      },
      mp);
}

// A sender whose op failed (here: timed out before its receiver came) withdraws its single-copy
// send; the receiver, arriving later, fails with CommError saying so instead of reading a buffer
// the sender's caller may have reused.
TEST(VerbsShmCma, FailedSenderWithdrawsItsSend) {
  const std::string path = uniqueTempPath("verbs-cma-revoke");
  const std::string arrived = path + ".arrived";
  const std::string failed = path + ".failed";
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg =
        makeVerbs(path, rank, size, {{"C10D_SHM_CMA", "4096"}, {"C10D_ALGO", "broadcast:chain"}});
    std::vector<float> buf(1 << 18, rank == 0 ? 1.0f : 0.0f);
    BroadcastOptions bo;
    bo.rootRank = 0;
    // Rank 1 proved at setup that it can read rank 0 (every rank probes every peer once all
    // mapped the workspace), so rank 0's first send is a single-copy offer, not ring bytes.
    if (rank == 0) {
      bo.timeout = Milliseconds(300);
      test::expectThrowsWith<TimeoutError>(
          // The op's own timeout fails it; the wait's bound is only a backstop.
          [&] { pg->broadcast(tensorOf(buf.data(), buf.size()), bo)->wait(Milliseconds(5000)); },
          {"broadcast #0", "not yet read by their receivers"});
      std::fill(buf.begin(), buf.end(), -7.0f);  // the caller reuses its buffer at once
      std::fclose(std::fopen(failed.c_str(), "w"));
      // Keep the group (and the process) until rank 1 tried.
      for (int i = 0; i < 1000 && access(arrived.c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } else {
      // Rank 1 joins only once rank 0's op has failed: a rank 0 slowed past its 300 ms (a
      // loaded machine) would otherwise time out after rank 1 had legitimately read a chunk.
      for (int i = 0; i < 3000 && access(failed.c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_EQ(access(failed.c_str(), F_OK), 0) << "rank 0's broadcast never failed";
      bo.timeout = Milliseconds(5000);
      test::expectThrowsWith<CommError>(
          [&] { pg->broadcast(tensorOf(buf.data(), buf.size()), bo)->wait(); },
          {"rank 0 withdrew a single-copy send of 1048576 bytes"});
      EXPECT_EQ(buf[0], 0.0f) << "bytes of a withdrawn send were delivered";
      std::fclose(std::fopen(arrived.c_str(), "w"));
    }
  });
  std::remove(arrived.c_str());
  std::remove(failed.c_str());
}

TEST(VerbsShmAlgos, RecursiveDoublingAndBinomial) {
  // reduce's default over shm is the shm algorithm: binomial (over shm streams) forced here.
  sweepWith(3, {{"C10D_ALGO", "allreduce:recursive_doubling,broadcast:binomial,reduce:binomial"}},
            {1, 7, 1001});
}
TEST(VerbsShmAlgos, ManySmallChunks) {
  // 4 KiB staging slots: the shm pipeline runs hundreds of steps, tails and all.
  sweepWith(4, {{"C10D_SHM_CHUNK", "4096"}, {"C10D_SMALL_BYTES", "0"}}, {1, 7, 30011});
}

// The rabenseifner allreduce override at world sizes 1..8 (the fold for 3, 5, 6, 7) over shm
// streams and tcp: every dtype x op at counts 0, 1, below the world size and odd, then counts
// that take several 1 MiB segments per exchange for f32 and i64.
class VerbsRabenseifner : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(VerbsRabenseifner, AllreduceEveryDtypeOpAndCount) {
  const std::string transport = std::get<0>(GetParam());
  const int size = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("verbs-rab");
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(100);
  expectAllRanksOk(
      size,
      [&](int rank, int n) {
        auto pg =
            makeVerbs(path, rank, n,
                      {{"C10D_TRANSPORT", transport}, {"C10D_ALGO", "allreduce:rabenseifner"}});
        test::BackendParam p;
        p.backend = "verbs";
        auto check = [&](DataType dt, size_t count) {
          for (const ReduceOp& op : test::opsFor(*pg, dt, p.device)) {
            test::Buffer b(p, count, dt);
            test::fillInput(b, op, rank);
            AllreduceOptions ao;
            ao.reduceOp = op;
            pg->allreduce(b.tensor(), ao)->wait();
            std::ostringstream what;
            what << "rabenseifner/" << transport << " rank " << rank << "/" << n << " "
                 << toString(dt) << " " << toString(op) << " count " << count;
            test::expectValues(
                b, [&](size_t i) { return test::reference(dt, op, n, i); }, what.str(), n,
                test::ulpsTolerance(dt, op));
            if (::testing::Test::HasFailure()) return;
          }
        };
        const size_t small[] = {0, 1, static_cast<size_t>(std::max(2, n - 1)), 1001};
        for (size_t count : small)
          for (DataType dt : test::allDataTypes()) check(dt, count);
        check(DataType::kFloat32, 600001);
        check(DataType::kInt64, 300007);
        // The folded pair finishes last: without this, a rank that is done exits while they
        // still run, and shm's liveness check (any peer gone) fails them.
        pg->barrier()->wait();
      },
      mp);
}

INSTANTIATE_TEST_SUITE_P(Sizes, VerbsRabenseifner,
                         ::testing::Combine(::testing::Values(std::string("shm"),
                                                              std::string("tcp")),
                                            ::testing::Range(1, 9)),
                         [](const ::testing::TestParamInfo<VerbsRabenseifner::ParamType>& i) {
                           return std::get<0>(i.param) + "_np" +
                                  std::to_string(std::get<1>(i.param));
                         });

// A rank SIGKILLed between ops: the others' next collective fails with CommError, quickly.
void deadPeer(const std::string& transport) {
  const std::string path = uniqueTempPath("verbs-dead");
  auto results = test::runRanks(3, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_TRANSPORT", transport}}, Milliseconds(20000));
    std::vector<float> x(1 << 16, 1.0f);
    pg->allreduce(tensorOf(x.data(), x.size()))->wait();
    if (rank == 2) raise(SIGKILL);
    const auto t0 = std::chrono::steady_clock::now();
    auto w = pg->allreduce(tensorOf(x.data(), x.size()));
    // Both survivors talk to rank 2 in a 3-rank allreduce: each names it, and the op (#1).
    test::expectThrowsWith<CommError>([&] { w->wait(); },
                                      {"rank 2", "allreduce #1 in group " + pg->name()});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    // The group is broken now: later ops fail fast too, naming the first error.
    test::expectThrowsWith<CommError>(
        [&] { pg->allreduce(tensorOf(x.data(), x.size()))->wait(); },
        {"allreduce: process group " + pg->name() + " is unusable after an earlier error: ",
         "rank 2"});
  });
  EXPECT_TRUE(results[0].ok()) << results[0].describe();
  EXPECT_TRUE(results[1].ok()) << results[1].describe();
  EXPECT_FALSE(results[2].exited);
}

TEST(VerbsFailure, DeadPeerShm) {
  deadPeer("shm");
}
TEST(VerbsFailure, DeadPeerTcp) {
  deadPeer("tcp");
}

// A peer that destroyed its group cleanly (its process lives on, or exits) is gone for the group:
// an op that still needs it fails at once with a CommError naming it, on shm's barrier paths
// (small allreduce, barrier, broadcast) and its ring paths alike, not at the op timeout.
TEST(VerbsFailure, PeerThatLeftCleanlyIsAPromptCommError) {
  struct Case {
    std::string name;
    bool exits;  // the peer's process exits after leaving (else: it lives on)
    std::function<std::shared_ptr<Work>(ProcessGroup&, std::vector<float>&)> op;
  };
  const std::vector<Case> cases = {
      {"small allreduce", false,
       [](ProcessGroup& pg, std::vector<float>& x) {
         return pg.allreduce(tensorOf(x.data(), 8),
                             AllreduceOptions{ReduceOp::SUM, Milliseconds(60000)});
       }},
      {"barrier", true,
       [](ProcessGroup& pg, std::vector<float>&) {
         return pg.barrier(BarrierOptions{Milliseconds(60000)});
       }},
      {"broadcast", false,
       [](ProcessGroup& pg, std::vector<float>& x) {
         return pg.broadcast(tensorOf(x.data(), x.size()),
                             BroadcastOptions{0, Milliseconds(60000)});
       }},
      {"large allreduce", true,
       [](ProcessGroup& pg, std::vector<float>& x) {
         return pg.allreduce(tensorOf(x.data(), x.size()),
                             AllreduceOptions{ReduceOp::SUM, Milliseconds(60000)});
       }},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.name);
    const std::string path = uniqueTempPath("verbs-left");
    const std::string marker = path + ".checked";
    expectAllRanksOk(3, [&](int rank, int size) {
      auto pg = makeVerbs(path, rank, size, {{"C10D_TRANSPORT", "shm"}}, Milliseconds(60000));
      std::vector<float> x(1 << 18, 1.0f);
      pg->allreduce(tensorOf(x.data(), x.size()))->wait();
      if (rank == 2) {
        pg.reset();  // leaves the group cleanly
        if (cs.exits) return;
        for (int i = 0; i < 2000 && ::access(marker.c_str(), F_OK) != 0; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      const auto t0 = std::chrono::steady_clock::now();
      auto w = cs.op(*pg, x);
      try {
        w->wait();
        ADD_FAILURE() << cs.name << " succeeded without rank 2";
      } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 2 "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(" #1 in group"), std::string::npos) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "expected CommError naming rank 2, got: " << e.what();
      }
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
      if (rank == 0) std::ofstream(marker) << "done";
    });
    std::remove(marker.c_str());
  }
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
