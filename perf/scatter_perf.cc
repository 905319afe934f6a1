// scatter_perf: rank r ends with the root's r-th part.
// Size = the root's (scattered) bytes; count = elements per rank. Bus bandwidth: (n-1)/n x
// algbw, as nccl-tests (n-1 of the n parts cross a link; see docs/performance.md).
#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  CollCounts c;
  c.recvCount = perRankCount(count, eltSize, nranks);
  c.sendCount = c.recvCount * nranks;
  c.paramCount = c.recvCount;
  c.recvInplaceOffset = c.recvCount;  // in-place: rank r's output is its own part of the input
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * nranks * typeSize), sec,
               static_cast<double>(nranks - 1) / nranks, algBw, busBw);
}

void initData(const InitArgs& a) {
  if (a.rank == a.root) {
    fillInput(a.input, a.counts.sendCount, 0, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
  }
  fillInput(a.expected, a.counts.recvCount, a.rank * a.counts.recvCount, a.dtype, ReduceOp::SUM,
            a.seed, 0, 1);
}

std::shared_ptr<Work> run(const RunArgs& a) {
  ScatterOptions opts;
  opts.rootRank = a.root;
  std::vector<Tensor> inputs;
  if (a.pg->rank() == a.root) {
    for (int r = 0; r < a.pg->size(); ++r)
      inputs.push_back(a.tensor(a.at(a.send, r * a.count), a.count));
  }
  return a.pg->scatter(a.tensor(a.recv, a.count), inputs, opts);
}

}  // namespace

const Collective kScatter{"Scatter",
                          /*rooted=*/true,
                          /*reduces=*/false,
                          /*opColumn=*/false,
                          /*checkInPlace=*/true,
                          counts,
                          bandwidth,
                          initData,
                          run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kScatter);
}
#endif
