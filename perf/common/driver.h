// The row loop of the perf binaries, shared by the c10d ones (perfMain: a ProcessGroup, ranks
// exchanging through its Store) and the MPI baselines (mpiPerfMain in mpi_driver.h:
// MPI_COMM_WORLD), so that every binary prints the same nccl-tests table and JSON from one piece of
// code.
//
// PerfRanks is what the loop needs from the ranks besides the collective itself: barriers,
// combining the per-rank times and error counts, gathering the "# Rank" lines, and whether an
// (op, type) can run. Every method is collective (all ranks call it, in the same order) except
// rank(), size(), group() and unsupported(). One thread per rank.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/process_group.h"
#include "c10d/core/reduce_op.h"
#include "c10d/core/work.h"
#include "perf/common/collective.h"
#include "perf/common/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

class PerfRanks {
 public:
  virtual ~PerfRanks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // RunArgs::pg of every op (nullptr where the ops do not use c10d, as the MPI baselines).
  virtual ProcessGroup* group() = 0;
  // Why (op, type) cannot run on `device` ("# Skipping" line), or "" when it can. Asked only for
  // collectives that reduce.
  virtual std::string unsupported(ReduceOp::Kind op, DataType type, Device device) = 0;
  virtual void barrier() = 0;
  // -m: the ops started between these run as one group; endCoalescing() returns its Work.
  virtual void startCoalescing() = 0;
  virtual std::shared_ptr<Work> endCoalescing() = 0;
  // -a: one rank's value combined over the ranks (every rank gets the result).
  virtual double combine(double value, TimeCombine how) = 0;
  virtual int64_t sum(int64_t value) = 0;
  // Every rank's string, in rank order.
  virtual std::vector<std::string> allgather(const std::string& value) = 0;
};

// What the header of the output says about the run.
struct PerfSetup {
  std::string backendName;  // JSON "backend" ("verbs", "mpi")
  std::string backendDesc;  // the "# Rank" line's last word (ProcessGroup::describe())
  std::string versionLine;  // "# c10d version ... backend ... world size ...\n"
  Device device;
};

// Prints the header, runs every row of `coll` (-d types x -o ops x -r roots x sizes, each
// out-of-place then in-place; see driver.cc), the footer, and writes -J on rank 0. Returns the
// exit code: 0, or 1 when any element was wrong or the average busbw fell below
// NCCL_TESTS_MIN_BW. Throws c10d::Error on a bad -r or a failed op.
int runPerfTable(int argc, char** argv, const Collective& coll, const std::string& program,
                 const PerfOptions& o, const PerfSetup& setup, PerfRanks& ranks);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
