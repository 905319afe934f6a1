// nccl_all_reduce_baseline_perf: a plain ncclAllReduce loop on one CUDA stream, with the same
// flags, table and JSON as all_reduce_perf, as the baseline the nccl backend is measured against
// (perf/compare --nccl-baseline). Built only with the nccl backend; runs only on GPUs.
//
// Launch it as the backend binaries are (c10drun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT). Rank r uses cuda:LOCAL_RANK; the NCCL unique id goes through the env:// TCPStore
// (as the backend's does). Per row, as nccl-tests: -w warm-up ops, then -n x -m ops timed with
// one cudaStreamSynchronize at the end (or after each op with -z), out-of-place then in-place;
// -c validation passes copy the result back and count wrong elements. Types: every perf type;
// ops: sum prod max min avg, and mulsum on floating types (ncclRedOpCreatePreMulSum). --backend
// and --device are accepted and ignored (always NCCL on CUDA).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/backends/nccl/unique_id.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/store.h"
#include "perf/common/data.h"
#include "perf/common/options.h"
#include "perf/common/report.h"
#include "perf/common/world.h"

#define BASE_CUDA(call)                                                                          \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) C10D_THROW(::c10d::Error, #call " failed: ", cudaGetErrorString(e_)); \
  } while (0)
#define BASE_NCCL(call)                                                                          \
  do {                                                                                           \
    ncclResult_t r_ = (call);                                                                    \
    if (r_ != ncclSuccess) C10D_THROW(::c10d::Error, #call " failed: ", ncclGetErrorString(r_)); \
  } while (0)

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

// The backend's own tables: the baseline maps types and PREMUL_SUM scalars exactly as it does.
ncclDataType_t ncclType(DataType t) {
  return nccl::toNcclDataType(t);
}

// The NCCL op for `k`; PREMUL_SUM is created on `comm` with this rank's scalar (as the driver's
// makeOp does). Returns false when NCCL cannot do it on `t`.
bool ncclOp(ReduceOp::Kind k, DataType t, int rank, ncclComm_t comm, ncclRedOp_t* op) {
  switch (k) {
    case ReduceOp::SUM:
      *op = ncclSum;
      return true;
    case ReduceOp::PRODUCT:
      *op = ncclProd;
      return true;
    case ReduceOp::MIN:
      *op = ncclMin;
      return true;
    case ReduceOp::MAX:
      *op = ncclMax;
      return true;
    case ReduceOp::AVG:
      *op = ncclAvg;
      return true;
    case ReduceOp::PREMUL_SUM: {
      if (!isFloatingPoint(t)) return false;
      nccl::PreMulScalar scalar = nccl::makePreMulScalar(premulScalar(rank), t);
      BASE_NCCL(
          ncclRedOpCreatePreMulSum(op, scalar.bytes, ncclType(t), ncclScalarHostImmediate, comm));
      return true;
    }
    default:
      return false;
  }
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) { BASE_CUDA(cudaMalloc(&p, n)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* p = nullptr;
};

int run(int argc, char** argv, const PerfOptions& o, const std::string& program) {
  const LaunchInfo launch = detectLaunch();
  BASE_CUDA(cudaSetDevice(launch.localRank));
  setenv("MASTER_ADDR", "127.0.0.1", 0);
  setenv("MASTER_PORT", "29500", 0);
  const Milliseconds timeout(static_cast<int64_t>(o.timeoutSec) * 1000);
  std::shared_ptr<Store> store;
  int rank = 0, n = 1;
  if (launch.launcher != "none") {
    Rendezvous rv = rendezvous("env://", launch.rank, launch.worldSize, timeout);
    store = rv.store;
    rank = rv.rank;
    n = rv.worldSize;
  }
  RankExchange ex(store, rank, n);
  auto generate = [] {
    ncclUniqueId id;
    BASE_NCCL(ncclGetUniqueId(&id));
    nccl::UniqueIdBytes out{};
    std::memcpy(out.data(), id.internal, out.size());
    return out;
  };
  nccl::UniqueIdBytes idBytes =
      n == 1 ? generate()
             : nccl::exchangeUniqueId(*store, rank, "baseline/uid", timeout, generate, "baseline");
  ncclUniqueId id;
  std::memcpy(id.internal, idBytes.data(), idBytes.size());
  ncclComm_t comm = nullptr;
  BASE_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t stream = nullptr;
  BASE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  auto print = [&](const std::string& s) {
    if (rank == 0) std::fputs(s.c_str(), stdout);
  };
  std::unique_ptr<JsonReport> json;
  if (rank == 0 && !o.jsonPath.empty()) {
    json = std::make_unique<JsonReport>(argc, argv, program, o);
    json->setWorld("nccl-baseline", "cuda", n);
  }
  int version = 0;
  ncclGetVersion(&version);
  print("# Collective test starting: " + program + "\n");
  print(detail::str("# plain ncclAllReduce loop, NCCL ", version, ", world size ", n, "\n"));
  print(optionLine(o));
  print(blockingLine(o.blocking));
  print(tableHeader());

  const size_t bytes = o.maxBytes + 64;
  DeviceBuffer send(bytes), recv(bytes);
  std::vector<char> host(bytes), expected(bytes);
  int64_t errors = 0;
  double bwSum = 0;
  int bwCount = 0, seed = 0;
  for (DataType t : o.dtypes) {
    for (size_t k = 0; k < o.ops.size(); ++k) {
      ncclRedOp_t op{};
      if (!ncclOp(o.ops[k], t, rank, comm, &op)) {
        print("# Skipping " + std::string(toString(t)) + " " + o.opNames[k] + ": not an NCCL op\n");
        continue;
      }
      const size_t es = elementSize(t);
      for (size_t size = o.minBytes; size <= o.maxBytes;
           size = std::max(size + 1, o.stepFactor > 1 ? size * o.stepFactor : size + o.stepBytes)) {
        const size_t count = size / es;
        print(rowPreamble(count * es, count, toString(t), o.opNames[k], -1));
        if (json) json->beginRow(count * es, count, toString(t), o.opNames[k], -1);
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          const void* src = inPlace ? recv.p : send.p;
          auto once = [&] {
            BASE_NCCL(ncclAllReduce(src, recv.p, count, ncclType(t), op, comm, stream));
            if (o.blocking) BASE_CUDA(cudaStreamSynchronize(stream));
          };
          for (int w = 0; w < o.warmupIters; ++w) once();
          BASE_CUDA(cudaStreamSynchronize(stream));
          ex.allgather("");  // barrier through the store, never through NCCL
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < o.iters * o.aggIters; ++i) once();
          BASE_CUDA(cudaStreamSynchronize(stream));
          double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          sec = ex.combine(sec / (o.iters * o.aggIters), o.average);
          const double algBw = static_cast<double>(count * es) / 1e9 / sec;
          const double busBw = n > 1 ? algBw * 2.0 * (n - 1) / n : 0.0;
          int64_t wrong = 0;
          if (o.check) {
            ++seed;
            fillInput(host.data(), count, 0, t, o.ops[k], seed, rank, n);
            fillReduced(expected.data(), count, 0, t, o.ops[k], seed, n);
            BASE_CUDA(cudaMemcpy(inPlace ? recv.p : send.p, host.data(), count * es,
                                 cudaMemcpyHostToDevice));
            once();
            BASE_CUDA(cudaStreamSynchronize(stream));
            BASE_CUDA(cudaMemcpy(host.data(), recv.p, count * es, cudaMemcpyDeviceToHost));
            const int64_t local = countWrong(host.data(), expected.data(), count, t);
            errors += local != 0;
            wrong = ex.sum(local);
          }
          print(rowBody(sec * 1e6, algBw, busBw, o.check > 0, wrong));
          if (json) json->rowResult(inPlace, sec * 1e6, algBw, busBw, o.check > 0, wrong);
          bwSum += busBw;
          ++bwCount;
        }
        print("\n");
        if (json) json->endRow(o.iters);
      }
      if (o.ops[k] == ReduceOp::PREMUL_SUM) ncclRedOpDestroy(op, comm);
    }
  }
  const int64_t totalErrors = ex.sum(errors);
  const double avg = bwCount ? bwSum / bwCount : 0;
  print(footer(static_cast<int>(totalErrors), avg, -1, program));
  if (json) {
    json->finish(static_cast<int>(totalErrors), avg, -1);
    json->write(o.jsonPath);
  }
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  ex.finish(timeout);
  return totalErrors ? 1 : 0;
}

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

int main(int argc, char** argv) {
  using namespace c10d::perf;
  PerfOptions o;
  std::string program;
  if (int code = startPerfMain(argc, argv, &o, &program); code >= 0) return code;
  try {
    return run(argc, argv, o, program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
}
