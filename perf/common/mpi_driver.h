// The MPI baselines' main(): the same flags, nccl-tests table and JSON as the c10d perf binaries
// (the shared row loop of driver.h), over MPI_COMM_WORLD instead of a ProcessGroup. Built only
// where CMake finds MPI; launched with mpirun. CPU buffers only.
#pragma once

#include <mpi.h>

#include <memory>

#include "c10d/base/abi.h"
#include "perf/common/collective.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// `coll`'s sizes, data and bandwidth with `mpiRun` as the op: mpiRun gets RunArgs with pg ==
// nullptr, runs the MPI call to completion and returns a completed Work. Reductions run for the
// types and ops MPI has (int8 uint8 int32 int64 float double; sum prod min max); the others are
// skipped with a "# Skipping" line. Calls MPI_Init / MPI_Finalize. Returns the exit code (0; 1 when
// any element was wrong or anything failed, after MPI_Abort; 2 for bad flags).
int mpiPerfMain(int argc, char** argv, const Collective& coll,
                std::shared_ptr<Work> (*mpiRun)(const RunArgs&));

// The MPI datatype and op of a c10d type and op; MPI_DATATYPE_NULL / MPI_OP_NULL where MPI has
// none.
MPI_Datatype mpiDatatype(DataType type);
MPI_Op mpiReduceOp(ReduceOp::Kind op);

// Throws c10d::Error naming `what` when an MPI call did not return MPI_SUCCESS (the baselines
// set MPI_ERRORS_RETURN on MPI_COMM_WORLD).
void checkMpi(int rc, const char* what);

// A completed Work for an MPI call that has returned.
std::shared_ptr<Work> mpiDone(OpType op);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
