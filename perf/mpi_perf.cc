// mpi_<op>_perf: the Open MPI baselines of perf/compare --mpi, one binary per c10d perf binary,
// each with the same flags, sizes, data, checks, table and JSON as <op>_perf (the same Collective
// table, perf/<op>_perf.cc; the shared row loop, perf/common/driver.h), the op being the MPI call
// that does the same thing:
//   all_reduce      MPI_Allreduce              reduce     MPI_Reduce
//   all_gather      MPI_Allgather              gather     MPI_Gather
//   broadcast       MPI_Bcast                  scatter    MPI_Scatter
//   reduce_scatter  MPI_Reduce_scatter_block   alltoall   MPI_Alltoall
//   sendrecv        MPI_Sendrecv (ring: to rank + 1, from rank - 1)
// In-place runs use MPI_IN_PLACE where MPI has it. MPI_Bcast is in-place only: out-of-place, the
// root copies its input first, as c10d's broadcast_perf does. In-place reduce_scatter leaves the
// result at the start of the buffer where nccl-tests wants it at rank * count: ranks > 0 move it
// (in-place columns only). Non-reducing ops move bytes (MPI_BYTE), so every -d type runs;
// reductions run for the types and ops MPI has (mpi_driver.h). Built once per op from this file
// (C10D_PERF_MPI_OP names it), only where CMake finds MPI; launch with mpirun.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "perf/common/collectives.h"
#include "perf/common/mpi_driver.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

int worldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int worldSize() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// An MPI count (int) of `n` elements of the args' type (bytes when `asBytes`).
int mpiCount(const RunArgs& a, size_t n, bool asBytes) {
  const size_t c = asBytes ? n * elementSize(a.dtype) : n;
  C10D_CHECK_ARG(c <= static_cast<size_t>(INT_MAX), "MPI counts are ints: ", c,
                 asBytes ? " bytes" : " elements", " does not fit (use a smaller -e)");
  return static_cast<int>(c);
}

void* inPlaceOr(const RunArgs& a, void* p) {
  return a.inPlace ? MPI_IN_PLACE : p;
}

std::shared_ptr<Work> allReduce(const RunArgs& a) {
  checkMpi(MPI_Allreduce(inPlaceOr(a, a.send), a.recv, mpiCount(a, a.count, false),
                         mpiDatatype(a.dtype), mpiReduceOp(a.op.kind), MPI_COMM_WORLD),
           "MPI_Allreduce");
  return mpiDone(OpType::kAllreduce);
}

std::shared_ptr<Work> allGather(const RunArgs& a) {
  const int c = mpiCount(a, a.count, true);
  checkMpi(MPI_Allgather(inPlaceOr(a, a.send), c, MPI_BYTE, a.recv, c, MPI_BYTE, MPI_COMM_WORLD),
           "MPI_Allgather");
  return mpiDone(OpType::kAllgatherIntoTensor);
}

std::shared_ptr<Work> broadcast(const RunArgs& a) {
  if (!a.inPlace && worldRank() == a.root) a.copy(a.recv, a.send, a.count);
  checkMpi(MPI_Bcast(a.recv, mpiCount(a, a.count, true), MPI_BYTE, a.root, MPI_COMM_WORLD),
           "MPI_Bcast");
  return mpiDone(OpType::kBroadcast);
}

std::shared_ptr<Work> reduce(const RunArgs& a) {
  const bool root = worldRank() == a.root;
  // In-place: the input is the output buffer; only the root says MPI_IN_PLACE.
  const void* send = a.inPlace ? (root ? MPI_IN_PLACE : a.recv) : a.send;
  checkMpi(MPI_Reduce(send, root ? a.recv : nullptr, mpiCount(a, a.count, false),
                      mpiDatatype(a.dtype), mpiReduceOp(a.op.kind), a.root, MPI_COMM_WORLD),
           "MPI_Reduce");
  return mpiDone(OpType::kReduce);
}

std::shared_ptr<Work> reduceScatter(const RunArgs& a) {
  const int c = mpiCount(a, a.count, false);
  if (!a.inPlace) {
    checkMpi(MPI_Reduce_scatter_block(a.send, a.recv, c, mpiDatatype(a.dtype),
                                      mpiReduceOp(a.op.kind), MPI_COMM_WORLD),
             "MPI_Reduce_scatter_block");
    return mpiDone(OpType::kReduceScatterTensor);
  }
  // a.send is the whole input (inside the receive buffer); MPI leaves rank r's part at its start.
  checkMpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, a.send, c, mpiDatatype(a.dtype),
                                    mpiReduceOp(a.op.kind), MPI_COMM_WORLD),
           "MPI_Reduce_scatter_block");
  if (a.recv != a.send) std::memmove(a.recv, a.send, a.count * elementSize(a.dtype));
  return mpiDone(OpType::kReduceScatterTensor);
}

std::shared_ptr<Work> alltoall(const RunArgs& a) {
  const int c = mpiCount(a, a.count, true);
  checkMpi(MPI_Alltoall(inPlaceOr(a, a.send), c, MPI_BYTE, a.recv, c, MPI_BYTE, MPI_COMM_WORLD),
           "MPI_Alltoall");
  return mpiDone(OpType::kAlltoallSingle);
}

std::shared_ptr<Work> gather(const RunArgs& a) {
  const int c = mpiCount(a, a.count, true);
  const bool root = worldRank() == a.root;
  // In-place: rank r's input already is its slot of the root's output.
  const void* send = a.inPlace && root ? MPI_IN_PLACE : a.send;
  checkMpi(
      MPI_Gather(send, c, MPI_BYTE, root ? a.recv : nullptr, c, MPI_BYTE, a.root, MPI_COMM_WORLD),
      "MPI_Gather");
  return mpiDone(OpType::kGather);
}

std::shared_ptr<Work> scatter(const RunArgs& a) {
  const int c = mpiCount(a, a.count, true);
  const bool root = worldRank() == a.root;
  // In-place: the root's part of the input already is its output.
  void* recv = a.inPlace && root ? MPI_IN_PLACE : a.recv;
  checkMpi(
      MPI_Scatter(root ? a.send : nullptr, c, MPI_BYTE, recv, c, MPI_BYTE, a.root, MPI_COMM_WORLD),
      "MPI_Scatter");
  return mpiDone(OpType::kScatter);
}

std::shared_ptr<Work> sendRecv(const RunArgs& a) {
  const int c = mpiCount(a, a.count, true);
  const int n = worldSize(), r = worldRank();
  const int next = (r + 1) % n, prev = (r - 1 + n) % n;
  if (a.send == a.recv) {
    checkMpi(MPI_Sendrecv_replace(a.recv, c, MPI_BYTE, next, 0, prev, 0, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE),
             "MPI_Sendrecv_replace");
  } else {
    checkMpi(MPI_Sendrecv(a.send, c, MPI_BYTE, next, 0, a.recv, c, MPI_BYTE, prev, 0,
                          MPI_COMM_WORLD, MPI_STATUS_IGNORE),
             "MPI_Sendrecv");
  }
  return mpiDone(OpType::kRecv);
}

struct MpiBinary {
  const char* op;  // C10D_PERF_MPI_OP
  const Collective* coll;
  std::shared_ptr<Work> (*run)(const RunArgs&);
};

const MpiBinary kBinaries[] = {
    {"all_reduce", &kAllReduce, allReduce},
    {"all_gather", &kAllGather, allGather},
    {"broadcast", &kBroadcast, broadcast},
    {"reduce", &kReduce, reduce},
    {"reduce_scatter", &kReduceScatter, reduceScatter},
    {"alltoall", &kAlltoAll, alltoall},
    {"gather", &kGather, gather},
    {"scatter", &kScatter, scatter},
    {"sendrecv", &kSendRecv, sendRecv},
};

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

int main(int argc, char** argv) {
  using namespace c10d::perf;
  for (const MpiBinary& b : kBinaries) {
    if (std::strcmp(b.op, C10D_PERF_MPI_OP) == 0) return mpiPerfMain(argc, argv, *b.coll, b.run);
  }
  std::fprintf(stderr, "mpi_perf: built for an unknown op '%s'\n", C10D_PERF_MPI_OP);
  return 2;
}
