// reduce_perf: the root ends with the reduction of every rank's buffer; other ranks' output
// buffers are left as they were.
// Bus bandwidth: 1 x algbw (all data must enter the root through its one link; see
// docs/performance.md).
#include <cstring>

#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

CollCounts counts(size_t count, size_t /*eltSize*/, int /*nranks*/) {
  CollCounts c;
  c.sendCount = c.recvCount = c.paramCount = count;
  return c;
}

void bandwidth(size_t count, size_t typeSize, double sec, int /*nranks*/, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * typeSize), sec, 1.0, algBw, busBw);
}

void initData(const InitArgs& a) {
  fillInput(a.input, a.counts.sendCount, 0, a.dtype, a.op, a.seed, a.rank, a.nranks);
  // Non-roots keep what their output buffer held: zeros, or (in-place) their own input.
  std::memcpy(a.expected, a.recv, a.counts.recvCount * elementSize(a.dtype));
  if (a.rank == a.root) {
    fillReduced(a.expected, a.counts.recvCount, 0, a.dtype, a.op, a.seed, a.nranks);
  }
}

std::shared_ptr<Work> run(const RunArgs& a) {
  ReduceOptions opts;
  opts.reduceOp = a.op;
  opts.rootRank = a.root;
  // Out of place: reduceInto (the root's output is recv; other ranks pass none).
  if (a.inPlace) return a.pg->reduce(a.tensor(a.recv, a.count), opts);
  const Tensor out = a.pg->rank() == a.root ? a.tensor(a.recv, a.count) : Tensor{};
  return a.pg->reduceInto(out, a.tensor(a.send, a.count), opts);
}

}  // namespace

const Collective kReduce{"Reduce",
                         /*rooted=*/true,
                         /*reduces=*/true,
                         /*opColumn=*/true,
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
  return c10d::perf::perfMain(argc, argv, c10d::perf::kReduce);
}
#endif
