// The nccl backend on real GPUs: every collective x dtype x op through the conformance sweep at
// world size 1 (one GPU) and up to 4 ranks (one GPU each), coalescing, the caller's stream,
// blocking_wait=0, eager init and ncclCommSplit sub-groups, refusals, and the timeout path (a rank
// that never joins: the other gets TimeoutError from the watchdog within the timeout; 2 GPUs).
// Every test skips with "no CUDA device: ..." where there are not enough GPUs. This process never
// touches CUDA itself (the device count is probed in a forked child): only the ranks do.
#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "c10d/backends/nccl/cuda_stream.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/file_store.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

#define C10D_REQUIRE_GPUS(n)                                                                 \
  do {                                                                                       \
    const int have = cudaDevicesForked();                                                    \
    if (have < (n)) {                                                                        \
      GTEST_SKIP() << "no CUDA device: this test needs " << (n) << " GPU(s), found " << have \
                   << " (cudaGetDeviceCount in a forked probe)";                             \
    }                                                                                        \
  } while (0)

void cudaOk(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(err));
}

// The conformance hooks for rank r on cuda:r (one GPU per rank, as NCCL requires).
BackendParam ncclOn(int device) {
  BackendParam p;
  p.backend = "nccl";
  p.device = Device::cuda(device);
  p.alloc = [device](size_t bytes) {
    void* ptr = nullptr;
    cudaOk(cudaSetDevice(device), "cudaSetDevice");
    cudaOk(cudaMalloc(&ptr, bytes), "cudaMalloc");
    return ptr;
  };
  p.free = [](void* ptr) { cudaFree(ptr); };
  p.toDevice = [](void* dst, const void* src, size_t bytes) {
    cudaOk(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  };
  p.toHost = [](void* dst, const void* src, size_t bytes) {
    cudaOk(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  };
  return p;
}

std::shared_ptr<ProcessGroup> ncclGroup(const std::string& path, int rank, int size,
                                        Milliseconds timeout = Milliseconds(60000),
                                        std::map<std::string, std::string> config = {}) {
  cudaOk(cudaSetDevice(rank), "cudaSetDevice");
  auto store = std::make_shared<FileStore>(path, size, timeout);
  ProcessGroup::Options o;
  o.timeout = timeout;
  o.config = std::move(config);
  return createProcessGroup("nccl", store, rank, size, o);
}

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

void sweepCase(int ws) {
  const std::string path = uniqueTempPath("nccl-sweep");
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(280);
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        const BackendParam p = ncclOn(rank);
        auto pg = ncclGroup(path, rank, size);
        runSweep(*pg, p, SweepOptions{});
        SweepOptions big;
        big.counts = {1000003};
        big.only = {{DataType::kFloat32, ReduceOp::SUM},
                    {DataType::kBFloat16, ReduceOp::SUM},
                    {DataType::kFloat16, ReduceOp::AVG},
                    {DataType::kInt32, ReduceOp::MAX},
                    {DataType::kFloat64, ReduceOp::PREMUL_SUM}};
        runSweep(*pg, p, big);
        // Counts at which NCCL's one-rank kernel for scaling ops leaves out the last elements
        // (nccl_types.h: 1000003 doubles above; these for floats and 16-bit types).
        SweepOptions tail;
        tail.counts = {1000065, 1000197};
        tail.only = {{DataType::kFloat32, ReduceOp::PREMUL_SUM},
                     {DataType::kFloat32, ReduceOp::AVG},
                     {DataType::kBFloat16, ReduceOp::PREMUL_SUM},
                     {DataType::kFloat16, ReduceOp::AVG}};
        runSweep(*pg, p, tail);
      },
      mp);
}

TEST(NcclGpu, SweepOneRankOneGpu) {
  C10D_REQUIRE_GPUS(1);
  sweepCase(1);
}

TEST(NcclGpu, SweepOneRankPerGpu) {
  C10D_REQUIRE_GPUS(2);
  sweepCase(std::min(cudaDevicesForked(), 4));
}

TEST(NcclGpu, CoalescedOpsBarrierAndCallerStream) {
  C10D_REQUIRE_GPUS(1);
  const int ws = std::min(cudaDevicesForked(), 2);
  const std::string path = uniqueTempPath("nccl-coalesce");
  expectAllRanksOk(ws, [&](int rank, int size) {
    const BackendParam p = ncclOn(rank);
    auto pg = ncclGroup(path, rank, size);
    pg->barrier()->wait();
    std::vector<Buffer> bufs;
    for (int k = 0; k < 3; ++k) {
      bufs.emplace_back(p, 1000 + k, DataType::kFloat32);
      fillInput(bufs.back(), ReduceOp::SUM, rank, k);
    }
    pg->startCoalescing();
    for (auto& b : bufs) pg->allreduce(b.tensor());
    auto w = pg->endCoalescing();
    EXPECT_EQ(w->opType(), OpType::kCoalesced);
    w->wait();
    for (int k = 0; k < 3; ++k) {
      expectValues(
          bufs[k],
          [&](size_t i) { return reference(DataType::kFloat32, ReduceOp::SUM, size, k + i); },
          "coalesced allreduce " + std::to_string(k), size);
    }
    // On the caller's own stream: the op waits for an async upload queued there, and the
    // download queued after synchronize() sees the result.
    cudaStream_t s = nullptr;
    cudaOk(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    Buffer b(p, 1 << 20, DataType::kFloat32);
    for (size_t i = 0; i < b.numel(); ++i)
      b.set(i, inputValue(DataType::kFloat32, ReduceOp::SUM, rank, i));
    {
      nccl::CurrentStreamGuard g(rank, s);
      cudaOk(cudaMemcpyAsync(b.tensor().data, b.host(), b.tensor().nbytes(), cudaMemcpyHostToDevice,
                             s),
             "upload");
      auto work = pg->allreduce(b.tensor());
      work->synchronize();
      cudaOk(cudaMemcpyAsync(b.host(), b.tensor().data, b.tensor().nbytes(), cudaMemcpyDeviceToHost,
                             s),
             "download");
      cudaOk(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      work->wait();
    }
    for (size_t i = 0; i < b.numel(); i += 4099) {
      EXPECT_EQ(b.get(i), reference(DataType::kFloat32, ReduceOp::SUM, size, i)) << i;
    }
    cudaStreamDestroy(s);
  });
}

TEST(NcclGpu, EagerInitSplitAndNonBlockingWait) {
  C10D_REQUIRE_GPUS(1);
  const int ws = std::min(cudaDevicesForked(), 2);
  const std::string path = uniqueTempPath("nccl-eager");
  expectAllRanksOk(ws, [&](int rank, int size) {
    const BackendParam p = ncclOn(rank);
    auto pg =
        ncclGroup(path, rank, size, Milliseconds(60000),
                  {{"eager_init", "1"}, {"blocking_wait", "0"}, {"high_priority_stream", "1"}});
    auto* nccl = dynamic_cast<nccl::ProcessGroupNccl*>(pg.get());
    ASSERT_NE(nccl, nullptr);
    EXPECT_TRUE(nccl->hasCommunicator(Device::cuda(rank)));
    Buffer b(p, 4097, DataType::kInt64);
    fillInput(b, ReduceOp::SUM, rank);
    auto w = pg->allreduce(b.tensor());
    w->wait();  // blocking_wait=0: only the current (default) stream waits
    expectValues(
        b, [&](size_t i) { return reference(DataType::kInt64, ReduceOp::SUM, size, i); },
        "allreduce with blocking_wait=0", size);  // the download is stream-ordered
    // A sub-group of every rank is made with ncclCommSplit from this communicator.
    std::vector<int> all;
    for (int r = 0; r < size; ++r) all.push_back(r);
    auto sub = pg->newGroup(all);
    ASSERT_NE(sub, nullptr);
    fillInput(b, ReduceOp::MAX, rank);
    sub->allreduce(b.tensor(), AllreduceOptions{ReduceOp::MAX, kUnsetTimeout})->wait();
    expectValues(
        b, [&](size_t i) { return reference(DataType::kInt64, ReduceOp::MAX, size, i); },
        "allreduce on a split sub-group", size);
    sub->shutdown();
  });
}

TEST(NcclGpu, RefusesWhatNcclCannotDo) {
  C10D_REQUIRE_GPUS(1);
  const std::string path = uniqueTempPath("nccl-refuse");
  expectAllRanksOk(1, [&](int rank, int size) {
    const BackendParam p = ncclOn(rank);
    auto pg = ncclGroup(path, rank, size);
    Buffer i(p, 8, DataType::kInt32);
    std::vector<int32_t> host(8, 1);
    EXPECT_THROW(pg->allreduce(i.tensor(), AllreduceOptions{ReduceOp::BXOR, kUnsetTimeout}),
                 InvalidArgument);
    EXPECT_THROW(pg->allreduce(tensorOf(host.data(), host.size())), InvalidArgument);  // CPU
    EXPECT_FALSE(pg->supports(ReduceOp::SUM, DataType::kFloat32, Device::cpu()));
    EXPECT_FALSE(pg->supports(ReduceOp::AVG, DataType::kBool, Device::cuda(rank)));
    EXPECT_TRUE(pg->supports(ReduceOp::PREMUL_SUM, DataType::kBFloat16, Device::cuda(rank)));
    pg->allreduce(i.tensor())->wait();  // still usable
  });
}

TEST(NcclGpu, RankThatNeverJoinsTimesOutOnTheOther) {
  C10D_REQUIRE_GPUS(2);
  const std::string path = uniqueTempPath("nccl-timeout");
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(90);
  expectAllRanksOk(
      2,
      [&](int rank, int size) {
        const BackendParam p = ncclOn(rank);
        auto pg = ncclGroup(path, rank, size, Milliseconds(30000));
        Buffer b(p, 1024, DataType::kFloat32);
        fillInput(b, ReduceOp::SUM, rank);
        pg->allreduce(b.tensor())->wait();  // #0 on both ranks
        if (rank == 0) {
          std::this_thread::sleep_for(std::chrono::seconds(6));  // never joins #1
          return;
        }
        const auto start = Clock::now();
        auto w = pg->allreduce(b.tensor(), AllreduceOptions{ReduceOp::SUM, Milliseconds(2000)});
        auto later = pg->allreduce(b.tensor());  // queued behind #1
        try {
          w->wait();
          ADD_FAILURE() << "allreduce without rank 0 completed";
        } catch (const TimeoutError& e) {
          const double s = std::chrono::duration<double>(Clock::now() - start).count();
          EXPECT_LT(s, 5.0) << e.what();
          EXPECT_TRUE(contains(e.what(), "allreduce #1")) << e.what();
          EXPECT_TRUE(contains(e.what(), "nccl:world")) << e.what();
          EXPECT_TRUE(contains(e.what(), "cuda:1")) << e.what();
        }
        EXPECT_THROW(later->wait(Milliseconds(5000)), TimeoutError);  // failed by the abort
        EXPECT_THROW(pg->allreduce(b.tensor()), TimeoutError);        // the group is broken
        pg->shutdown();
      },
      mp);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
