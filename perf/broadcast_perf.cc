// broadcast_perf: every rank ends with the root's buffer.
// Bus bandwidth: 1 x algbw (all data must leave the root through its one link; see
// docs/performance.md).
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
  if (a.rank == a.root) {
    fillInput(a.input, a.counts.sendCount, 0, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
  }
  fillInput(a.expected, a.counts.recvCount, 0, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
}

std::shared_ptr<Work> run(const RunArgs& a) {
  // c10d's broadcast is in-place: out-of-place, the root copies its input over first.
  if (!a.inPlace && a.pg->rank() == a.root) a.copy(a.recv, a.send, a.count);
  BroadcastOptions opts;
  opts.rootRank = a.root;
  return a.pg->broadcast(a.tensor(a.recv, a.count), opts);
}

}  // namespace

const Collective kBroadcast{
    "Broadcast",           /*rooted=*/true, /*reduces=*/false, /*opColumn=*/false,
    /*checkInPlace=*/true, counts,          bandwidth,         initData,           run};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d

#ifndef C10D_PERF_NO_MAIN
int main(int argc, char** argv) {
  return c10d::perf::perfMain(argc, argv, c10d::perf::kBroadcast);
}
#endif
