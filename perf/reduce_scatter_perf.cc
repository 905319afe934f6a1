// reduce_scatter_perf: rank r ends with the reduction over ranks of everyone's r-th part.
// Size = the input bytes (n parts); count = elements per rank. Bus bandwidth: (n-1)/n x algbw
// (each rank must receive n-1 contributions to its part; see docs/performance.md).
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
  c.sendCount = base * nranks;
  c.recvCount = base;
  c.paramCount = base;
  c.recvInplaceOffset = base;  // in-place: rank r's output is its own part of the input
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * typeSize * nranks), sec,
               static_cast<double>(nranks - 1) / nranks, algBw, busBw);
}

void initData(const InitArgs& a) {
  fillInput(a.input, a.counts.sendCount, 0, a.dtype, a.op, a.seed, a.rank, a.nranks);
  fillReduced(a.expected, a.counts.recvCount, a.rank * a.counts.recvCount, a.dtype, a.op, a.seed,
              a.nranks);
}

std::shared_ptr<Work> run(const RunArgs& a) {
  const size_t n = static_cast<size_t>(a.pg->size());
  ReduceScatterOptions opts;
  opts.reduceOp = a.op;
  return a.pg->reduceScatterTensor(a.tensor(a.recv, a.count), a.tensor(a.send, a.count * n), opts);
}

}  // namespace

const Collective kReduceScatter{
    "ReduceScatter",   /*rooted=*/false,      /*reduces=*/true,
    /*opColumn=*/true, /*checkInPlace=*/true, counts,           bandwidth, initData, run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kReduceScatter);
}
#endif
