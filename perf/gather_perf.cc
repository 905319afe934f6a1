// gather_perf: the root ends with every rank's buffer, in rank order.
// Size = the gathered bytes; count = elements per rank. Bus bandwidth: (n-1)/n x algbw, as
// nccl-tests (n-1 of the n parts cross a link; see docs/performance.md).
#include <cstring>

#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  CollCounts c;
  c.sendCount = perRankCount(count, eltSize, nranks);
  c.recvCount = c.sendCount * nranks;
  c.paramCount = c.sendCount;
  c.sendInplaceOffset = c.sendCount;  // in-place: rank r's input is its own slot of the output
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * nranks * typeSize), sec,
               static_cast<double>(nranks - 1) / nranks, algBw, busBw);
}

void initData(const InitArgs& a) {
  const size_t part = a.counts.sendCount;
  fillInput(a.input, part, a.rank * part, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
  std::memcpy(a.expected, a.recv, a.counts.recvCount * elementSize(a.dtype));
  if (a.rank == a.root) {
    fillInput(a.expected, a.counts.recvCount, 0, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
  }
}

std::shared_ptr<Work> run(const RunArgs& a) {
  GatherOptions opts;
  opts.rootRank = a.root;
  std::vector<Tensor> outputs;
  if (a.pg->rank() == a.root) {
    for (int r = 0; r < a.pg->size(); ++r)
      outputs.push_back(a.tensor(a.at(a.recv, r * a.count), a.count));
  }
  return a.pg->gather(outputs, a.tensor(a.send, a.count), opts);
}

}  // namespace

const Collective kGather{"Gather",
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
  return c10d::perf::perfMain(argc, argv, c10d::perf::kGather);
}
#endif
