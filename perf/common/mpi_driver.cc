#include "perf/common/mpi_driver.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/base/error.h"
#include "perf/common/driver.h"
#include "perf/common/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

MPI_Datatype mpiDatatype(DataType type) {
  switch (type) {
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

MPI_Op mpiReduceOp(ReduceOp::Kind op) {
  switch (op) {
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

void checkMpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  C10D_THROW(CommError, what, " failed: ", std::string(text, static_cast<size_t>(len)),
             " (MPI error ", rc, ")");
}

std::shared_ptr<Work> mpiDone(OpType op) {
  return makeCompletedWork(op, 0, "mpi");
}

namespace {

// PerfRanks over MPI_COMM_WORLD.
class MpiRanks : public PerfRanks {
 public:
  MpiRanks() {
    checkMpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  ProcessGroup* group() override { return nullptr; }
  std::string unsupported(ReduceOp::Kind op, DataType type, Device /*device*/) override {
    if (mpiDatatype(type) == MPI_DATATYPE_NULL) return "MPI has no reduction on this type";
    if (mpiReduceOp(op) == MPI_OP_NULL) return "not an MPI reduction op";
    return "";
  }
  void barrier() override { checkMpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  // MPI has no coalescing: -m runs its ops one after the other (each blocking).
  void startCoalescing() override {}
  std::shared_ptr<Work> endCoalescing() override { return mpiDone(OpType::kCoalesced); }
  double combine(double value, TimeCombine how) override {
    double out = value;
    if (how == TimeCombine::kRank0) {
      checkMpi(MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
      return out;
    }
    MPI_Op op = how == TimeCombine::kMin ? MPI_MIN : how == TimeCombine::kMax ? MPI_MAX : MPI_SUM;
    checkMpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD), "MPI_Allreduce");
    return how == TimeCombine::kAverage ? out / size_ : out;
  }
  int64_t sum(int64_t value) override {
    int64_t out = 0;
    checkMpi(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }
  std::vector<std::string> allgather(const std::string& value) override {
    int len = static_cast<int>(value.size());
    std::vector<int> lens(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    checkMpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD),
             "MPI_Allgather");
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    checkMpi(MPI_Allgatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(),
                            MPI_CHAR, MPI_COMM_WORLD),
             "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lens[r]));
    return out;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

std::string mpiLibrary() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<size_t>(len));
  const size_t cut = s.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..."
  return cut == std::string::npos ? s : s.substr(0, cut);
}

}  // namespace

int mpiPerfMain(int argc, char** argv, const Collective& coll,
                std::shared_ptr<Work> (*mpiRun)(const RunArgs&)) {
  PerfOptions o;
  std::string program;
  if (int code = startPerfMain(argc, argv, &o, &program); code >= 0) return code;
  if (o.device != "cpu") {
    std::fprintf(stderr, "%s: error: the MPI baselines run on CPU buffers only (--device %s)\n",
                 program.c_str(), o.device.c_str());
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = 1;
  try {
    Collective mpiColl = coll;
    mpiColl.run = mpiRun;
    MpiRanks ranks;
    PerfSetup setup;
    setup.backendName = "mpi";
    setup.backendDesc = "mpi";
    setup.versionLine = detail::str("# c10d version ", C10D_VERSION, " backend mpi (", mpiLibrary(),
                                    ") device cpu world size ", ranks.size(), " launcher mpirun\n");
    setup.device = Device::cpu();
    rc = runPerfTable(argc, argv, mpiColl, program, o, setup, ranks);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
