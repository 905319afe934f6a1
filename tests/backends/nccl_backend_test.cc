// The nccl backend's GPU-free pieces, tested here on every machine: registration and the
// `available` check, the clear error when a group is made without a GPU, the config table, the
// dtype / op mapping, the unique-id exchange through a FileStore with real forked ranks, the
// watchdog's bookkeeping (PendingWorks with an injected event query and clock) and the
// thread-local current stream. GPU paths are in nccl_gpu_test.cc.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/backends/nccl/config.h"
#include "c10d/backends/nccl/cuda_stream.h"
#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/backends/nccl/pending_works.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/backends/nccl/register.h"
#include "c10d/backends/nccl/unique_id.h"
#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/core/backend_work.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {
namespace {

using Clock = PendingWorks::Clock;
using test::expectAllRanksOk;
using test::uniqueTempPath;

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

TEST(NcclRegistry, RegisteredBelowTheCpuBackendsWithAnAvailableCheck) {
  ASSERT_TRUE(isBackendRegistered("nccl"));
  const BackendInfo info = backendInfo("nccl");
  EXPECT_TRUE(contains(info.description, "NCCL 2.")) << info.description;
  ASSERT_TRUE(info.available != nullptr);
  // "auto" must never choose nccl while a CPU backend exists: CPU tensors never land on it.
  EXPECT_NE(defaultBackend(), "nccl");
  for (const std::string& name : registeredBackends()) {
    if (name != "nccl") {
      EXPECT_GT(backendInfo(name).priority, info.priority) << name;
    }
  }
}

TEST(NcclRegistry, AvailableSaysNoCudaDevice) {
  std::string why;
  if (ncclAvailable(&why)) GTEST_SKIP() << "a CUDA device is present here";
  EXPECT_TRUE(contains(why, "no CUDA device")) << why;
  std::string reason;
  EXPECT_FALSE(backendInfo("nccl").available(&reason));
  EXPECT_EQ(reason, why);
}

TEST(NcclRegistry, CreatingAGroupWithoutAGpuIsAClearError) {
  std::string why;
  if (ncclAvailable(&why)) GTEST_SKIP() << "a CUDA device is present here";
  auto store = std::make_shared<HashStore>(Milliseconds(1000));
  try {
    createProcessGroup("nccl", store, 0, 1);
    ADD_FAILURE() << "a nccl group was created without a GPU";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "nccl")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no CUDA device")) << e.what();
  }
  // Directly, bypassing the registry's check: the constructor refuses too.
  try {
    ProcessGroupNccl pg(store, 0, 1, ProcessGroup::Options{});
    ADD_FAILURE() << "ProcessGroupNccl constructed without a GPU";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no CUDA device")) << e.what();
    EXPECT_TRUE(contains(e.what(), "rank 0 of group nccl:world")) << e.what();
  }
}

TEST(NcclConfig, DefaultsEnvironmentOptionsAndErrors) {
  ::unsetenv("C10D_NCCL_BLOCKING_WAIT");
  ::unsetenv("C10D_NCCL_EAGER_INIT");
  Config c = parseConfig({});
  EXPECT_FALSE(c.eagerInit);
  EXPECT_TRUE(c.blockingWait);
  EXPECT_FALSE(c.highPriorityStream);
  EXPECT_EQ(c.deviceId, -1);
  EXPECT_EQ(c.watchdogPollUs, 1000);
  EXPECT_EQ(c.shutdownGraceMs, 2000);
  EXPECT_TRUE(c.split);
  ::setenv("C10D_NCCL_BLOCKING_WAIT", "0", 1);
  EXPECT_FALSE(parseConfig({}).blockingWait);
  // Options win over the environment.
  EXPECT_TRUE(parseConfig({{"blocking_wait", "1"}}).blockingWait);
  ::unsetenv("C10D_NCCL_BLOCKING_WAIT");
  c = parseConfig({{"eager_init", "1"}, {"high_priority_stream", "1"}, {"device_id", "3"}});
  EXPECT_TRUE(c.eagerInit);
  EXPECT_TRUE(c.highPriorityStream);
  EXPECT_EQ(c.deviceId, 3);
  try {
    parseConfig({{"eager_inti", "1"}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "eager_inti")) << e.what();
    EXPECT_TRUE(contains(e.what(), "eager_init")) << e.what();  // lists the known keys
  }
  try {
    parseConfig({{"blocking_wait", "yes"}});
    ADD_FAILURE() << "malformed value accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "blocking_wait")) << e.what();
    EXPECT_TRUE(contains(e.what(), "[0, 1]")) << e.what();
  }
  EXPECT_THROW(parseConfig({{"watchdog_poll_us", "0"}}), InvalidArgument);
  EXPECT_THROW(parseConfig({{"device_id", "-2"}}), InvalidArgument);
  // C10D_DEBUG: DETAIL turns the cross-rank description check on (any case); others off.
  ::unsetenv("C10D_DEBUG");
  EXPECT_FALSE(parseConfig({}).detail);
  EXPECT_TRUE(parseConfig({{"debug", "detail"}}).detail);
  EXPECT_FALSE(parseConfig({{"debug", "INFO"}}).detail);
  ::setenv("C10D_DEBUG", "DETAIL", 1);
  EXPECT_TRUE(parseConfig({}).detail);
  EXPECT_FALSE(parseConfig({{"debug", "OFF"}}).detail);
  ::unsetenv("C10D_DEBUG");
  try {
    parseConfig({{"debug", "loud"}});
    ADD_FAILURE() << "bad debug level accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "loud")) << e.what();
    EXPECT_TRUE(contains(e.what(), "OFF, INFO or DETAIL")) << e.what();
  }
  EXPECT_TRUE(contains(describeConfig(parseConfig({{"debug", "DETAIL"}})), "nccl.debug = DETAIL"));
  const std::string table = describeConfig(parseConfig({}));
  for (const auto& e : settings().rows()) {
    EXPECT_TRUE(contains(table, "nccl." + e.key + " = ")) << table;
    EXPECT_TRUE(contains(table, e.env)) << table;
  }
}

TEST(NcclTypes, DataTypeTable) {
  EXPECT_EQ(toNcclDataType(DataType::kFloat32), ncclFloat32);
  EXPECT_EQ(toNcclDataType(DataType::kFloat64), ncclFloat64);
  EXPECT_EQ(toNcclDataType(DataType::kFloat16), ncclFloat16);
  EXPECT_EQ(toNcclDataType(DataType::kBFloat16), ncclBfloat16);
  EXPECT_EQ(toNcclDataType(DataType::kInt8), ncclInt8);
  EXPECT_EQ(toNcclDataType(DataType::kUInt8), ncclUint8);
  EXPECT_EQ(toNcclDataType(DataType::kInt32), ncclInt32);
  EXPECT_EQ(toNcclDataType(DataType::kInt64), ncclInt64);
  EXPECT_EQ(toNcclDataType(DataType::kBool), ncclUint8);  // one byte, 0 or 1
  EXPECT_THROW(toNcclDataType(static_cast<DataType>(42)), InvalidArgument);
}

TEST(NcclTypes, ReduceOpTable) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const auto dt = static_cast<DataType>(d);
    const bool isBool = dt == DataType::kBool;
    SCOPED_TRACE(toString(dt));
    EXPECT_EQ(toNcclRedOp(ReduceOp::SUM, dt), isBool ? ncclMax : ncclSum);
    EXPECT_EQ(toNcclRedOp(ReduceOp::PRODUCT, dt), isBool ? ncclMin : ncclProd);
    EXPECT_EQ(toNcclRedOp(ReduceOp::MIN, dt), ncclMin);
    EXPECT_EQ(toNcclRedOp(ReduceOp::MAX, dt), ncclMax);
    EXPECT_EQ(supportsReduce(ReduceOp::AVG, dt), !isBool);
    if (!isBool) {
      EXPECT_EQ(toNcclRedOp(ReduceOp::AVG, dt), ncclAvg);
    }
    EXPECT_EQ(supportsReduce(ReduceOp::PREMUL_SUM, dt), isFloatingPoint(dt));
    // PREMUL_SUM is made per call (ncclRedOpCreatePreMulSum), never a built-in op.
    EXPECT_THROW(toNcclRedOp(ReduceOp::PREMUL_SUM, dt), InvalidArgument);
    for (auto op : {ReduceOp::BAND, ReduceOp::BOR, ReduceOp::BXOR}) {
      EXPECT_FALSE(supportsReduce(op, dt)) << toString(op);
      EXPECT_THROW(toNcclRedOp(op, dt), InvalidArgument) << toString(op);
    }
  }
}

TEST(NcclTypes, PreMulScalarIsOneElementOfTheDtype) {
  float f = 0;
  std::memcpy(&f, makePreMulScalar(0.5, DataType::kFloat32).bytes, 4);
  EXPECT_EQ(f, 0.5f);
  double d = 0;
  std::memcpy(&d, makePreMulScalar(0.125, DataType::kFloat64).bytes, 8);
  EXPECT_EQ(d, 0.125);
  uint16_t h = 0;
  std::memcpy(&h, makePreMulScalar(0.5, DataType::kFloat16).bytes, 2);
  EXPECT_EQ(h, 0x3800);  // IEEE half 0.5
  std::memcpy(&h, makePreMulScalar(0.5, DataType::kBFloat16).bytes, 2);
  EXPECT_EQ(h, 0x3f00);  // bfloat16 0.5
  EXPECT_THROW(makePreMulScalar(2.0, DataType::kInt32), InvalidArgument);
}

// The one-rank workaround (nccl_types.h): the cases seen on an H100 with NCCL 2.28.9, then every
// count up to where the kernel's block count stops growing, for each element size that scales.
TEST(NcclTypes, OneRankReductionsAreSplitWhereNcclsKernelLeavesOutTheTail) {
  EXPECT_TRUE(scalesOnOneRank(ReduceOp::PREMUL_SUM, DataType::kFloat64));
  EXPECT_TRUE(scalesOnOneRank(ReduceOp::AVG, DataType::kBFloat16));
  EXPECT_FALSE(scalesOnOneRank(ReduceOp::AVG, DataType::kInt32));  // NCCL: sum, then divide
  EXPECT_FALSE(scalesOnOneRank(ReduceOp::SUM, DataType::kFloat32));
  // 1000003 doubles: 32 blocks of 31250 (already whole packs of 2): the last 3 were left out.
  EXPECT_FALSE(oneRankKernelCovers(1000003, 8));
  EXPECT_EQ(oneRankHead(1000003, 8), 1000000u);
  EXPECT_TRUE(oneRankKernelCovers(1000003, 4));  // 31250 rounds up to 31252 floats a block
  EXPECT_EQ(oneRankHead(1000003, 4), 1000003u);
  EXPECT_FALSE(oneRankKernelCovers(1000065, 4));
  EXPECT_FALSE(oneRankKernelCovers(1000197, 2));
  EXPECT_TRUE(oneRankKernelCovers(2048, 8));  // one block (16 KiB) covers any count
  for (size_t bytes : {2, 4, 8}) {
    const size_t maxTail = 16384 / bytes;
    size_t split = 0;
    for (size_t count = 1; count <= 33 * maxTail + 4096; ++count) {
      const size_t head = oneRankHead(count, bytes);
      ASSERT_LE(head, count);
      ASSERT_TRUE(oneRankKernelCovers(head, bytes)) << count << " x " << bytes;
      if (head == count) continue;
      ++split;
      ASSERT_LE(count - head, maxTail) << count << " x " << bytes;
      ASSERT_TRUE(oneRankKernelCovers(count - head, bytes)) << count << " x " << bytes;
    }
    EXPECT_GT(split, 0u) << bytes;
  }
}

UniqueIdBytes realUniqueId() {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  UniqueIdBytes out{};
  std::memcpy(out.data(), id.internal, kUniqueIdBytes);
  return out;
}

void exchangeCase(int size) {
  const std::string path = uniqueTempPath("nccl-uid");
  const std::string out = uniqueTempPath("nccl-uid-out");
  expectAllRanksOk(size, [&](int rank, int n) {
    auto store = std::make_shared<FileStore>(path, n, Milliseconds(20000));
    const UniqueIdBytes id =
        exchangeUniqueId(*store, rank, uniqueIdKey(0), Milliseconds(20000), realUniqueId, "t");
    // Every rank publishes what it got; rank 0 compares them all, byte for byte.
    store->set("got/" + std::to_string(rank), Bytes(id.begin(), id.end()));
    if (rank != 0) return;
    bool nonZero = false;
    for (uint8_t b : id) nonZero = nonZero || b != 0;
    EXPECT_TRUE(nonZero) << "ncclGetUniqueId gave an all-zero id";
    for (int r = 0; r < n; ++r) {
      const Bytes got = store->get("got/" + std::to_string(r));
      ASSERT_EQ(got.size(), kUniqueIdBytes) << "rank " << r;
      EXPECT_TRUE(std::equal(got.begin(), got.end(), id.begin())) << "rank " << r;
    }
  });
}

TEST(NcclUniqueId, EveryRankGetsRankZerosIdTwoRanks) {
  exchangeCase(2);
}
TEST(NcclUniqueId, EveryRankGetsRankZerosIdFourRanks) {
  exchangeCase(4);
}

TEST(NcclUniqueId, MissingRankZeroTimesOutNamingTheKey) {
  const std::string path = uniqueTempPath("nccl-uid-missing");
  expectAllRanksOk(2, [&](int rank, int n) {
    if (rank == 0) return;  // rank 0 never creates the communicator
    auto store = std::make_shared<FileStore>(path, n, Milliseconds(5000));
    const auto start = Clock::now();
    try {
      exchangeUniqueId(*store, rank, uniqueIdKey(3), Milliseconds(300), realUniqueId, "nccl:world");
      ADD_FAILURE() << "exchange without rank 0 returned";
    } catch (const TimeoutError& e) {
      EXPECT_TRUE(contains(e.what(), "nccl/uid/3")) << e.what();
      EXPECT_TRUE(contains(e.what(), "rank 1 of group nccl:world")) << e.what();
      EXPECT_TRUE(contains(e.what(), "300 ms")) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
  });
}

TEST(NcclUniqueId, WrongSizedValueIsAnError) {
  HashStore store(Milliseconds(1000));
  store.set(uniqueIdKey(0), std::string("short"));
  try {
    exchangeUniqueId(store, 1, uniqueIdKey(0), Milliseconds(100), nullptr, "g");
    ADD_FAILURE() << "a 5-byte id was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "5 bytes")) << e.what();
  }
}

// ---- PendingWorks: the watchdog's bookkeeping, with fake events and a fake clock ----

struct FakeOp {
  std::shared_ptr<BackendWork> work;
  std::shared_ptr<std::atomic<bool>> fired = std::make_shared<std::atomic<bool>>(false);
};

FakeOp addOp(PendingWorks& p, uint64_t seq, Clock::time_point deadline,
             const std::string& where = "cuda:0", int stream = -1,
             std::shared_ptr<std::atomic<int>> queries = nullptr) {
  FakeOp op;
  op.work =
      std::make_shared<BackendWork>(OpType::kAllreduce, seq, "nccl:world", Milliseconds(1000));
  auto fired = op.fired;
  p.add({op.work, deadline,
         [fired, queries] {
           if (queries) ++*queries;
           return fired->load();
         },
         where, stream});
  return op;
}

TEST(NcclPendingWorks, CompletesFiredEventsInAnyOrder) {
  PendingWorks p;
  const auto t0 = Clock::now();
  std::vector<FakeOp> ops;
  for (uint64_t i = 0; i < 4; ++i) ops.push_back(addOp(p, i, t0 + std::chrono::seconds(10)));
  ops[2].fired->store(true);
  ops[0].fired->store(true);
  auto r = p.poll(t0);
  EXPECT_EQ(r.completed, 2u);
  EXPECT_FALSE(r.expired);
  EXPECT_TRUE(ops[0].work->isSuccess());
  EXPECT_TRUE(ops[2].work->isSuccess());
  EXPECT_FALSE(ops[1].work->isCompleted());
  EXPECT_EQ(p.size(), 2u);
  ops[1].fired->store(true);
  ops[3].fired->store(true);
  EXPECT_EQ(p.poll(t0).completed, 2u);
  EXPECT_TRUE(p.empty());
}

// Ops of one stream complete in order: a poll queries each stream up to its first running op.
TEST(NcclPendingWorks, QueriesAStreamOnlyUpToItsFirstRunningOp) {
  PendingWorks p;
  const auto t0 = Clock::now();
  auto q0 = std::make_shared<std::atomic<int>>(0);
  auto q1 = std::make_shared<std::atomic<int>>(0);
  std::vector<FakeOp> s0, s1;
  for (uint64_t i = 0; i < 50; ++i) {
    s0.push_back(addOp(p, 2 * i, t0 + std::chrono::seconds(10), "cuda:0", 0, q0));
    s1.push_back(addOp(p, 2 * i + 1, t0 + std::chrono::seconds(20), "cuda:1", 1, q1));
  }
  s0[0].fired->store(true);
  s0[1].fired->store(true);
  auto r = p.poll(t0);
  EXPECT_EQ(r.completed, 2u);
  EXPECT_EQ(q0->load(), 3) << "stream 0: two fired ops and the first running one";
  EXPECT_EQ(q1->load(), 1) << "stream 1: its first op only";
  EXPECT_EQ(p.size(), 98u);
  // Deadlines are still checked behind a running op: the earliest expired one is reported.
  r = p.poll(t0 + std::chrono::seconds(11));
  ASSERT_TRUE(r.expired);
  EXPECT_EQ(r.expired.get(), s0[2].work.get());
  for (auto& op : s0) op.fired->store(true);
  for (auto& op : s1) op.fired->store(true);
  EXPECT_EQ(p.poll(t0).completed, 98u);
  EXPECT_TRUE(p.empty());
}

TEST(NcclPendingWorks, ReportsTheEarliestExpiredDeadline) {
  PendingWorks p;
  const auto t0 = Clock::now();
  using std::chrono::milliseconds;
  auto a = addOp(p, 0, t0 + milliseconds(500));
  auto b = addOp(p, 1, t0 + milliseconds(100), "cuda:1");  // issued later, shorter timeout
  auto c = addOp(p, 2, t0 + milliseconds(300));
  EXPECT_EQ(p.nextDeadline(), t0 + milliseconds(100));
  EXPECT_FALSE(p.poll(t0 + milliseconds(99)).expired);
  auto r = p.poll(t0 + milliseconds(400));
  ASSERT_TRUE(r.expired);
  EXPECT_EQ(r.expired->sequenceNumber(), 1u);  // b, not a (issued first) nor c
  EXPECT_EQ(r.expiredWhere, "cuda:1");
  // poll() only reports: the Works stay pending until the watchdog acts.
  EXPECT_FALSE(b.work->isCompleted());
  // A fired event wins over its deadline.
  b.fired->store(true);
  r = p.poll(t0 + milliseconds(400));
  EXPECT_EQ(r.completed, 1u);
  ASSERT_TRUE(r.expired);
  EXPECT_EQ(r.expired->sequenceNumber(), 2u);
  EXPECT_FALSE(a.work->isCompleted());
}

TEST(NcclPendingWorks, DropsWorksCompletedElsewhere) {
  PendingWorks p;
  const auto t0 = Clock::now();
  auto a = addOp(p, 0, t0);
  a.work->finish();  // e.g. Work::wait() saw the event first
  auto b = addOp(p, 1, t0);
  b.work->abort();
  auto r = p.poll(t0 + std::chrono::seconds(1));
  EXPECT_EQ(r.completed, 0u);
  EXPECT_FALSE(r.expired);  // completed Works never time out
  EXPECT_TRUE(p.empty());
}

TEST(NcclPendingWorks, AThrowingQueryFailsItsWork) {
  PendingWorks p;
  auto w = std::make_shared<BackendWork>(OpType::kBroadcast, 7, "nccl:world", Milliseconds(1000));
  p.add({w, Clock::now() + std::chrono::seconds(5),
         []() -> bool { throw Error("cudaEventQuery failed: cudaErrorLaunchFailure"); }, "cuda:2"});
  auto r = p.poll(Clock::now());
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failureWhere, "cuda:2");
  EXPECT_TRUE(w->isCompleted());
  EXPECT_THROW(std::rethrow_exception(w->exception()), Error);
  EXPECT_TRUE(p.empty());
}

TEST(NcclPendingWorks, FailAllFailsEveryPendingWorkWithItsOwnMessage) {
  PendingWorks p;
  const auto t0 = Clock::now();
  auto a = addOp(p, 4, t0 + std::chrono::seconds(5));
  auto b = addOp(p, 5, t0 + std::chrono::seconds(5), "cuda:1");
  b.work->finish();
  const size_t n = p.failAll([](const Work& w, const std::string& where) {
    return std::make_exception_ptr(TimeoutError(w.describe() + " on " + where + ": aborted"));
  });
  EXPECT_EQ(n, 1u);  // b was already complete
  EXPECT_TRUE(p.empty());
  try {
    a.work->wait(Milliseconds(10));
    ADD_FAILURE() << "a failed Work waited successfully";
  } catch (const TimeoutError& e) {
    EXPECT_TRUE(contains(e.what(), "allreduce #4 in group nccl:world on cuda:0")) << e.what();
  }
  EXPECT_TRUE(b.work->isSuccess());
}

TEST(NcclPendingWorks, ConcurrentIssueAndPoll) {
  PendingWorks p;
  std::atomic<bool> stop{false};
  std::atomic<size_t> completed{0};
  std::thread poller([&] {
    while (!stop.load() || !p.empty()) completed += p.poll(Clock::now()).completed;
  });
  std::vector<FakeOp> ops;
  for (uint64_t i = 0; i < 2000; ++i) {
    ops.push_back(addOp(p, i, Clock::now() + std::chrono::seconds(60)));
    if (i >= 3) ops[i - 3].fired->store(true);
  }
  for (auto& op : ops) op.fired->store(true);
  stop = true;
  poller.join();
  EXPECT_EQ(completed.load(), ops.size());
  for (auto& op : ops) EXPECT_TRUE(op.work->isSuccess());
}

// A poll examines the entries outside the lock: an op issued while a query is slow (a CUDA call
// contending with launches) is added at once, counted by size(), and kept after the older ones.
TEST(NcclPendingWorks, AddNeverWaitsBehindAPollsQueries) {
  PendingWorks p;
  const auto t0 = Clock::now();
  std::atomic<bool> inQuery{false}, release{false};
  auto slow =
      std::make_shared<BackendWork>(OpType::kAllreduce, 0, "nccl:world", Milliseconds(1000));
  p.add({slow, t0 + std::chrono::seconds(60),
         [&] {
           inQuery = true;
           while (!release.load()) std::this_thread::yield();
           return false;
         },
         "cuda:0", 0});
  std::thread poller([&] { p.poll(t0); });
  while (!inQuery.load()) std::this_thread::yield();
  std::atomic<bool> added{false};
  FakeOp later;
  std::thread issuer([&] {
    later = addOp(p, 1, t0 + std::chrono::seconds(60), "cuda:0", 0);
    added = true;
  });
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (!added.load() && Clock::now() < until) std::this_thread::yield();
  const bool addedDuringQuery = added.load();
  EXPECT_TRUE(addedDuringQuery) << "add() waited for the poll's query to return";
  if (addedDuringQuery) {
    EXPECT_EQ(p.size(), 2u);
  }
  release = true;
  poller.join();
  issuer.join();
  EXPECT_EQ(p.size(), 2u);
  // Issue order is kept: the op behind the still-running one is not queried.
  later.fired->store(true);
  EXPECT_EQ(p.poll(t0).completed, 0u);
  slow->finish();
  EXPECT_EQ(p.poll(t0).completed, 1u);
  EXPECT_TRUE(later.work->isSuccess());
  EXPECT_TRUE(p.empty());
}

TEST(NcclCurrentStream, ThreadLocalWithGuard) {
  auto* fake = reinterpret_cast<cudaStream_t>(0x1234);
  EXPECT_EQ(currentStream(0), nullptr);  // the legacy default stream
  {
    CurrentStreamGuard g(1, fake);
    EXPECT_EQ(currentStream(1), fake);
    EXPECT_EQ(currentStream(0), nullptr);
    std::thread([] { EXPECT_EQ(currentStream(1), nullptr); }).join();
  }
  EXPECT_EQ(currentStream(1), nullptr);
  EXPECT_THROW(setCurrentStream(-1, fake), InvalidArgument);
}

}  // namespace
}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
