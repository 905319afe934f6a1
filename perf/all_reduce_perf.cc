// all_reduce_perf: every rank ends with the reduction of every rank's buffer.
// Bus bandwidth: 2(n-1)/n x algbw (each element crosses n-1 links to be reduced and n-1 more to
// be spread back; see docs/performance.md).
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

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
               double* busBw) {
  setBandwidth(static_cast<double>(count * typeSize), sec, 2.0 * (nranks - 1) / nranks, algBw,
               busBw);
}

void initData(const InitArgs& a) {
  fillInput(a.input, a.counts.sendCount, 0, a.dtype, a.op, a.seed, a.rank, a.nranks);
  fillReduced(a.expected, a.counts.recvCount, 0, a.dtype, a.op, a.seed, a.nranks);
}

std::shared_ptr<Work> run(const RunArgs& a) {
  AllreduceOptions opts;
  opts.reduceOp = a.op;
  // Out of place: allreduceInto (ncclAllReduce(send, recv)), no copy of the input first.
  if (a.inPlace) return a.pg->allreduce(a.tensor(a.recv, a.count), opts);
  return a.pg->allreduceInto(a.tensor(a.recv, a.count), a.tensor(a.send, a.count), opts);
}

}  // namespace

const Collective kAllReduce{
    "AllReduce",           /*rooted=*/false, /*reduces=*/true, /*opColumn=*/true,
    /*checkInPlace=*/true, counts,           bandwidth,        initData,          run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kAllReduce);
}
#endif
