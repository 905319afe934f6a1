// mpi_all_reduce_perf: MPI_Allreduce measured with the same flags, table and JSON as
// all_reduce_perf, as a baseline for perf/compare --mpi. Built only where CMake finds MPI.
// Launch with mpirun. Types: int8 uint8 int32 int64 float double; ops: sum prod min max (others
// are skipped with a "# Skipping" line). Time = wall clock per op, combined over ranks with -a.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/common/data.h"
#include "perf/common/options.h"
#include "perf/common/report.h"

namespace c10d {
namespace perf {
namespace {

MPI_Datatype mpiType(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(ReduceOp::Kind k) {
  switch (k) {
    case ReduceOp::SUM:
      return MPI_SUM;
    case ReduceOp::PRODUCT:
      return MPI_PROD;
    case ReduceOp::MIN:
      return MPI_MIN;
    case ReduceOp::MAX:
      return MPI_MAX;
    default:
      return MPI_OP_NULL;
  }
}

double combine(double v, TimeCombine how, int size) {
  double out = v;
  if (how == TimeCombine::kRank0) {
    MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return out;
  }
  MPI_Op op = how == TimeCombine::kMin ? MPI_MIN : how == TimeCombine::kMax ? MPI_MAX : MPI_SUM;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return how == TimeCombine::kAverage ? out / size : out;
}

int run(int argc, char** argv, const PerfOptions& o, const std::string& program) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  auto print = [&](const std::string& s) {
    if (rank == 0) std::fputs(s.c_str(), stdout);
  };
  std::unique_ptr<JsonReport> json;
  if (rank == 0 && !o.jsonPath.empty()) {
    json = std::make_unique<JsonReport>(argc, argv, program, o);
    json->setWorld("mpi", "cpu", n);
  }
  print("# Collective test starting: " + program + "\n");
  print(optionLine(o));
  print(tableHeader());
  std::vector<char> send(o.maxBytes + 64), recv(o.maxBytes + 64), expected(o.maxBytes + 64);
  int64_t errors = 0;
  double bwSum = 0;
  int bwCount = 0, seed = 0;
  for (DataType t : o.dtypes) {
    for (size_t k = 0; k < o.ops.size(); ++k) {
      if (mpiType(t) == MPI_DATATYPE_NULL || mpiOp(o.ops[k]) == MPI_OP_NULL) {
        print("# Skipping " + std::string(toString(t)) + " " + o.opNames[k] + ": not an MPI op\n");
        continue;
      }
      const size_t es = elementSize(t);
      for (size_t size = o.minBytes; size <= o.maxBytes;
           size = std::max(size + 1, o.stepFactor > 1 ? size * o.stepFactor : size + o.stepBytes)) {
        const size_t count = size / es;
        const int c = static_cast<int>(count);
        print(rowPreamble(count * es, count, toString(t), o.opNames[k], -1));
        if (json) json->beginRow(count * es, count, toString(t), o.opNames[k], -1);
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          const void* src = inPlace ? MPI_IN_PLACE : send.data();
          auto once = [&] {
            MPI_Allreduce(src, recv.data(), c, mpiType(t), mpiOp(o.ops[k]), MPI_COMM_WORLD);
          };
          for (int w = 0; w < o.warmupIters; ++w) once();
          MPI_Barrier(MPI_COMM_WORLD);
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < o.iters * o.aggIters; ++i) once();
          double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          sec = combine(sec / (o.iters * o.aggIters), o.average, n);
          const double algBw = static_cast<double>(count * es) / 1e9 / sec;
          const double busBw = algBw * 2.0 * (n - 1) / n;
          int64_t wrong = 0;
          if (o.check) {
            ++seed;
            fillInput(inPlace ? recv.data() : send.data(), count, 0, t, o.ops[k], seed, rank, n);
            fillReduced(expected.data(), count, 0, t, o.ops[k], seed, n);
            once();
            int64_t local = countWrong(recv.data(), expected.data(), count, t);
            errors += local != 0;
            MPI_Allreduce(&local, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
          }
          print(rowBody(sec * 1e6, algBw, busBw, o.check > 0, wrong));
          if (json) json->rowResult(inPlace, sec * 1e6, algBw, busBw, o.check > 0, wrong);
          bwSum += busBw;
          ++bwCount;
        }
        print("\n");
        if (json) json->endRow(o.iters);
      }
    }
  }
  int64_t totalErrors = 0;
  MPI_Allreduce(&errors, &totalErrors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const double avg = bwCount ? bwSum / bwCount : 0;
  print(footer(static_cast<int>(totalErrors), avg, -1, program));
  if (json) {
    json->finish(static_cast<int>(totalErrors), avg, -1);
    json->write(o.jsonPath);
  }
  return totalErrors ? 1 : 0;
}

}  // namespace
}  // namespace perf
}  // namespace c10d

int main(int argc, char** argv) {
  using namespace c10d::perf;
  PerfOptions o;
  std::string program;
  if (int code = startPerfMain(argc, argv, &o, &program); code >= 0) return code;
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv, o, program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
