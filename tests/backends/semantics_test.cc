// Conformance: asynchronous completion, callbacks, sub-groups with ops in flight on several groups,
// coalescing, broadcastCoalesced and init through a file:// URL.
#include <atomic>
#include <thread>
#include <tuple>

#include "c10d/broadcast_coalesced.h"
#include "c10d/init.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
namespace test {
namespace {

class Semantics : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {
 protected:
  BackendParam p() const { return std::get<0>(GetParam()); }
  int ws() const { return std::get<1>(GetParam()); }
};

const ReduceOp kSum = ReduceOp::SUM;

TEST_P(Semantics, ManyOpsInFlightWaitedInReverseWithCallbacks) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("async");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    constexpr int kOps = 40;
    std::vector<Buffer> bufs;
    std::vector<std::shared_ptr<Work>> works;
    std::vector<std::unique_ptr<std::atomic<int>>> fired;
    for (int k = 0; k < kOps; ++k) {
      const DataType dt = k % 3 == 0 ? DataType::kFloat32 : DataType::kInt64;
      bufs.emplace_back(bp, 1 + static_cast<size_t>(k) * 37, dt);
      fillInput(bufs.back(), kSum, rank, k);
    }
    for (int k = 0; k < kOps; ++k) {
      works.push_back(pg->allreduce(bufs[k].tensor()));
      fired.push_back(std::make_unique<std::atomic<int>>(0));
      std::atomic<int>* counter = fired.back().get();
      works.back()->then([counter](Work& w) {
        EXPECT_TRUE(w.isCompleted());
        counter->fetch_add(1);
      });
    }
    for (int k = kOps - 1; k >= 0; --k) {
      works[k]->wait();
      EXPECT_TRUE(works[k]->isSuccess());
      EXPECT_EQ(works[k]->sequenceNumber(), static_cast<uint64_t>(k));
      expectValues(
          bufs[k], [&](size_t i) { return reference(bufs[k].dtype(), kSum, size, k + i); },
          "allreduce in flight #" + std::to_string(k), size);
    }
    // Callbacks run after completion, possibly just after wait() returned: give them a moment.
    for (int spin = 0; spin < 1000; ++spin) {
      bool all = true;
      for (auto& f : fired) all = all && f->load() >= 1;
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int k = 0; k < kOps; ++k) EXPECT_EQ(fired[k]->load(), 1) << "callback of op " << k;
    // A callback added after completion runs at once, on this thread.
    bool late = false;
    works[0]->then([&](Work&) { late = true; });
    EXPECT_TRUE(late);
    // The future completes too.
    Buffer b(bp, 3, DataType::kInt32);
    fillInput(b, kSum, rank);
    auto f = pg->allreduce(b.tensor())->future();
    EXPECT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    f.get();
  });
}

TEST_P(Semantics, SubgroupsWithCollectivesInFlightOnEveryGroup) {
  if (ws() < 2) GTEST_SKIP() << "needs two ranks";
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("subgroups");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto world = makeGroup(bp, path, rank, size);
    std::vector<int> odd;
    for (int r = 1; r < size; r += 2) odd.push_back(r);
    auto oddGroup = world->newGroup(odd);
    auto parity = world->split(rank % 2, rank);
    ASSERT_NE(parity, nullptr);
    EXPECT_EQ(oddGroup != nullptr, rank % 2 == 1);
    const int paritySize = (size + 1 - rank % 2) / 2;
    EXPECT_EQ(parity->size(), paritySize);
    EXPECT_EQ(parity->rank(), rank / 2);

    // Issue on every group before waiting on any; the three run concurrently.
    const size_t n = 4099;
    Buffer bw(bp, n, DataType::kFloat32), bp2(bp, n, DataType::kInt32), bo(bp, n, DataType::kInt64);
    fillInput(bw, kSum, rank);
    for (size_t i = 0; i < n; ++i) bp2.set(i, rank), bo.set(i, rank * 10 + 1);
    bp2.upload();
    bo.upload();
    auto w1 = world->allreduce(bw.tensor());
    auto w2 = parity->allreduce(bp2.tensor());
    std::shared_ptr<Work> w3;
    if (oddGroup)
      w3 = oddGroup->allreduce(bo.tensor(), AllreduceOptions{ReduceOp::MAX, kUnsetTimeout});
    if (w3) w3->wait();
    w2->wait();
    w1->wait();
    expectValues(
        bw, [&](size_t i) { return reference(DataType::kFloat32, kSum, size, i); }, "world", size);
    double paritySum = 0;
    for (int r = rank % 2; r < size; r += 2) paritySum += r;
    expectValues(
        bp2, [&](size_t) { return paritySum; }, "split(rank % 2)", size);
    if (oddGroup) {
      EXPECT_EQ(oddGroup->size(), static_cast<int>(odd.size()));
      expectValues(
          bo, [&](size_t) { return odd.back() * 10 + 1; }, "newGroup(odd ranks) max", size);
    }
    // Data movement and p2p inside the split group (ranks renumbered).
    Buffer g(bp, 5 * static_cast<size_t>(paritySize), DataType::kInt32);
    Buffer mine(bp, 5, DataType::kInt32);
    for (size_t i = 0; i < 5; ++i) mine.set(i, rank);
    mine.upload();
    parity->allgatherIntoTensor(g.tensor(), mine.tensor())->wait();
    expectValues(
        g, [&](size_t i) { return static_cast<double>(rank % 2 + 2 * (i / 5)); }, "split allgather",
        size);
    world->barrier()->wait();
  });
}

TEST_P(Semantics, CoalescedOpsCompleteAsOneWork) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("coalesce");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    std::vector<Buffer> bufs;
    for (int k = 0; k < 6; ++k) {
      bufs.emplace_back(bp, 100 + static_cast<size_t>(k), DataType::kFloat64);
      fillInput(bufs.back(), kSum, rank, k);
    }
    Buffer bc(bp, 17, DataType::kUInt8);
    fillInput(bc, kSum, rank == size - 1 ? 42 : rank);
    pg->startCoalescing();
    for (auto& b : bufs) pg->allreduce(b.tensor());
    pg->broadcast(bc.tensor(), BroadcastOptions{size - 1, kUnsetTimeout});
    EXPECT_TRUE(pg->isCoalescing());
    auto work = pg->endCoalescing();
    EXPECT_FALSE(pg->isCoalescing());
    work->wait();
    EXPECT_TRUE(work->isSuccess());
    for (int k = 0; k < 6; ++k) {
      expectValues(
          bufs[k], [&](size_t i) { return reference(DataType::kFloat64, kSum, size, k + i); },
          "coalesced allreduce", size);
    }
    expectValues(
        bc, [&](size_t i) { return inputValue(DataType::kUInt8, kSum, 42, i); },
        "coalesced broadcast", size);
  });
}

TEST_P(Semantics, BroadcastCoalescedBucketsByDtype) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("bcast-coalesced");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const int root = size - 1;
    const std::vector<std::pair<DataType, size_t>> shapes = {
        {DataType::kFloat32, 10},  {DataType::kInt64, 3},   {DataType::kFloat32, 7},
        {DataType::kBFloat16, 33}, {DataType::kFloat32, 0}, {DataType::kFloat32, 100},
        {DataType::kBool, 9},      {DataType::kInt64, 1},   {DataType::kFloat16, 2}};
    for (size_t bucketBytes : {size_t{1}, size_t{64}, size_t{1} << 20}) {
      std::vector<Buffer> bufs;
      std::vector<Tensor> ts;
      for (size_t k = 0; k < shapes.size(); ++k) {
        bufs.emplace_back(bp, shapes[k].second, shapes[k].first);
        fillInput(bufs.back(), kSum, rank == root ? 77 : rank, k);
      }
      for (auto& b : bufs) ts.push_back(b.tensor());
      auto work = broadcastCoalesced(*pg, ts, bucketBytes, root);
      work->wait();
      EXPECT_TRUE(work->isSuccess());
      for (size_t k = 0; k < bufs.size(); ++k) {
        expectValues(
            bufs[k], [&](size_t i) { return inputValue(bufs[k].dtype(), kSum, 77, k + i); },
            "broadcastCoalesced bucket " + std::to_string(bucketBytes) + " tensor " +
                std::to_string(k),
            size);
      }
    }
    EXPECT_THROW(broadcastCoalesced(*pg, {}, 0, 0), InvalidArgument);
    EXPECT_THROW(broadcastCoalesced(*pg, {}, 64, size), InvalidArgument);
    EXPECT_TRUE(broadcastCoalesced(*pg, {}, 64, 0)->isCompleted());
  });
}

TEST_P(Semantics, InitFromFileUrl) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("init-url");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    InitOptions o;
    o.backend = bp.backend;
    o.initMethod =
        "file://" + path + "?rank=" + std::to_string(rank) + "&world_size=" + std::to_string(size);
    o.timeout = std::chrono::seconds(60);
    o.config = bp.config;
    auto pg = init(o);
    EXPECT_EQ(pg->backendName(), bp.backend);
    // The param's config reached the backend: a variant shows in describe() ("verbs/tcp").
    if (!bp.variant.empty()) {
      EXPECT_NE(pg->describe().find(bp.variant), std::string::npos) << pg->describe();
    }
    EXPECT_EQ(pg->rank(), rank);
    EXPECT_EQ(pg->size(), size);
    Buffer b(bp, 11, DataType::kInt32);
    fillInput(b, kSum, rank);
    pg->allreduce(b.tensor())->wait();
    expectValues(
        b, [&](size_t i) { return reference(DataType::kInt32, kSum, size, i); }, "init allreduce",
        size);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, Semantics,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4, 8})),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Semantics);

}  // namespace
}  // namespace test
}  // namespace c10d
