// The Open MPI baselines (perf/mpi_perf.cc, one mpi_<op>_perf per perf binary) run under mpirun
// at -np 2 with tiny sizes: each prints the nccl-tests table of its c10d twin (same rows: sizes and
// counts from the same Collective table), checks clean, and catches the error
// C10D_PERF_INJECT_ERROR plants. Skipped where mpirun or the binaries (MPI not found by CMake) are
// absent.
#include <unistd.h>

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/report.h"
#include "tests/perf/perf_process.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

std::vector<ParsedRow> rowsOf(const std::string& out) {
  std::vector<ParsedRow> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    ParsedRow r;
    if (parseRow(line, &r)) rows.push_back(r);
  }
  return rows;
}

struct Case {
  const char* op;
  const Collective* coll;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.op;
}

class MpiPerf : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (findMpirun().empty()) GTEST_SKIP() << "mpirun is not on PATH";
    if (access(binaryPath().c_str(), X_OK) != 0) {
      GTEST_SKIP() << binaryPath() << " is not built (CMake did not find MPI)";
    }
  }
  std::string binary() const { return std::string("mpi_") + GetParam().op + "_perf"; }
  std::string binaryPath() const { return std::string(C10D_PERF_BIN_DIR) + "/" + binary(); }
};

TEST_P(MpiPerf, TwoRanksPrintTheTableOfItsTwinAndCheckClean) {
  const Collective& coll = *GetParam().coll;
  RunResult r = runMpiPerf(binary(), 2,
                           {"-b", "64", "-e", "4K", "-f", "8", "-n", "2", "-w", "1", "-c", "1",
                            "-d", "int32", "-o", "max"});
  ASSERT_TRUE(r.allOk()) << r.ranks[0].describe() << "\n" << r.out0 << r.err;
  const std::string& out = r.out0;
  EXPECT_EQ(out.rfind("# Collective test starting: " + binary() + "\n", 0), 0u) << out;
  EXPECT_NE(out.find(" backend mpi ("), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  0 Group  0 Pid"), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  1 Group  0 Pid"), std::string::npos) << out;
  EXPECT_NE(out.find("device  0 [cpu] mpi\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("# Collective test concluded: " + binary()), std::string::npos) << out;

  // Sizes 64, 512, 4096 bytes of int32; one root (0) for the rooted ops; "max" or "none".
  const std::vector<ParsedRow> rows = rowsOf(out);
  ASSERT_EQ(rows.size(), 3u) << out;
  size_t size = 64;
  for (const ParsedRow& row : rows) {
    const CollCounts c = coll.counts(size / 4, 4, 2);
    EXPECT_EQ(row.size, std::max(c.sendCount, c.recvCount) * 4) << out;
    EXPECT_EQ(row.count, c.paramCount) << out;
    EXPECT_EQ(row.type, "int32") << out;
    EXPECT_EQ(row.redop, coll.opColumn ? "max" : "none") << out;
    EXPECT_EQ(row.root, coll.rooted ? 0 : -1) << out;
    EXPECT_EQ(row.wrong[0], 0) << out;
    EXPECT_EQ(row.wrong[1], coll.checkInPlace ? 0 : -1) << out;
    EXPECT_GT(row.time[0], 0) << out;
    EXPECT_GT(row.time[1], 0) << out;
    size *= 8;
  }
}

TEST_P(MpiPerf, InjectedWrongElementIsCaught) {
  RunResult r = runMpiPerf(binary(), 2, {"-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "-c", "1"},
                           {{"C10D_PERF_INJECT_ERROR", "1"}});
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_TRUE(r.ranks[0].exited && !r.ranks[0].timedOut) << r.ranks[0].describe();
  EXPECT_NE(r.ranks[0].exitCode, 0) << r.out0 << r.err;
  const std::vector<ParsedRow> rows = rowsOf(r.out0);
  ASSERT_EQ(rows.size(), 1u) << r.out0 << r.err;
  EXPECT_GT(rows[0].wrong[0], 0) << r.out0;
  // One per checked half (nccl-tests does not check in-place alltoall and sendrecv).
  const std::string failed = GetParam().coll->checkInPlace ? "2 FAILED" : "1 FAILED";
  EXPECT_NE(r.out0.find("# Out of bounds values : " + failed), std::string::npos) << r.out0;
}

INSTANTIATE_TEST_SUITE_P(Perf, MpiPerf,
                         testing::Values(Case{"all_reduce", &kAllReduce},
                                         Case{"all_gather", &kAllGather},
                                         Case{"broadcast", &kBroadcast}, Case{"reduce", &kReduce},
                                         Case{"reduce_scatter", &kReduceScatter},
                                         Case{"alltoall", &kAlltoAll}, Case{"gather", &kGather},
                                         Case{"scatter", &kScatter}, Case{"sendrecv", &kSendRecv}),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.op);
                         });

// Reductions MPI does not have are skipped with nccl-tests' "# Skipping" line, not failed.
TEST(MpiPerfSkips, HalfAndAvgAreSkippedWithALine) {
  if (findMpirun().empty()) GTEST_SKIP() << "mpirun is not on PATH";
  if (access((std::string(C10D_PERF_BIN_DIR) + "/mpi_all_reduce_perf").c_str(), X_OK) != 0) {
    GTEST_SKIP() << "mpi_all_reduce_perf is not built";
  }
  RunResult r = runMpiPerf("mpi_all_reduce_perf", 2,
                           {"-b", "64", "-e", "64", "-n", "1", "-d", "half", "-o", "all"});
  ASSERT_TRUE(r.allOk()) << r.out0 << r.err;
  EXPECT_NE(r.out0.find("# Skipping half sum: MPI has no reduction on this type"),
            std::string::npos)
      << r.out0;
  EXPECT_TRUE(rowsOf(r.out0).empty()) << r.out0;
}

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
