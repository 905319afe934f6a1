// all_gather_perf: every rank ends with every rank's buffer, in rank order.
// Size = the gathered (output) bytes; count = elements per rank. Bus bandwidth: (n-1)/n x algbw
// (each rank must receive the n-1 parts it does not have; see docs/performance.md).
#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  CollCounts c;
  const size_t base = perRankCount(count, eltSize, nranks);
  c.sendCount = base;
  c.recvCount = base * nranks;
  c.paramCount = base;
  c.sendInplaceOffset = base;  // in-place: rank r's input is its own slot of the output
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * typeSize * nranks), sec,
               static_cast<double>(nranks - 1) / nranks, algBw, busBw);
}

void initData(const InitArgs& a) {
  const size_t part = a.counts.sendCount;
  fillInput(a.input, part, 0, a.dtype, ReduceOp::SUM, 33 * a.seed + a.rank, 0, 1);
  for (int r = 0; r < a.nranks; ++r) {
    fillInput(static_cast<char*>(a.expected) + r * part * elementSize(a.dtype), part, 0, a.dtype,
              ReduceOp::SUM, 33 * a.seed + r, 0, 1);
  }
}

std::shared_ptr<Work> run(const RunArgs& a) {
  const size_t n = static_cast<size_t>(a.pg->size());
  return a.pg->allgatherIntoTensor(a.tensor(a.recv, a.count * n), a.tensor(a.send, a.count));
}

}  // namespace

const Collective kAllGather{
    "AllGather",           /*rooted=*/false, /*reduces=*/false, /*opColumn=*/false,
    /*checkInPlace=*/true, counts,           bandwidth,         initData,           run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kAllGather);
}
#endif
