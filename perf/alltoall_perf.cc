// alltoall_perf: rank r sends its j-th part to rank j and receives rank j's r-th part.
// Size = the bytes of each rank's buffer (n parts); count = elements per part. Bus bandwidth:
// (n-1)/n x algbw (n-1 of the n parts cross a link; see docs/performance.md). As in nccl-tests the
// in-place half runs but is not checked ("N/A").
#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  CollCounts c;
  c.paramCount = perRankCount(count, eltSize, nranks);
  c.sendCount = c.recvCount = c.paramCount * nranks;
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * nranks * typeSize), sec,
               static_cast<double>(nranks - 1) / nranks, algBw, busBw);
}

void initData(const InitArgs& a) {
  fillInput(a.input, a.counts.sendCount, 0, a.dtype, ReduceOp::SUM, 33 * a.seed + a.rank, 0, 1);
  const size_t part = a.counts.paramCount;
  for (int r = 0; r < a.nranks; ++r) {
    fillInput(static_cast<char*>(a.expected) + r * part * elementSize(a.dtype), part, a.rank * part,
              a.dtype, ReduceOp::SUM, 33 * a.seed + r, 0, 1);
  }
}

std::shared_ptr<Work> run(const RunArgs& a) {
  const size_t total = a.count * static_cast<size_t>(a.pg->size());
  return a.pg->alltoallSingle(a.tensor(a.recv, total), a.tensor(a.send, total), {}, {});
}

}  // namespace

const Collective kAlltoAll{"AlltoAll",
                           /*rooted=*/false,
                           /*reduces=*/false,
                           /*opColumn=*/false,
                           /*checkInPlace=*/false,
                           counts,
                           bandwidth,
                           initData,
                           run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kAlltoAll);
}
#endif
