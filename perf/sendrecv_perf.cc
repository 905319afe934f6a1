// sendrecv_perf: every rank sends its buffer to the next rank and receives the previous one's
// (a ring of point-to-point transfers). Bus bandwidth: 1 x algbw (one transfer per link; see
// docs/performance.md). As in nccl-tests the in-place half runs but is not checked ("N/A").
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
  const size_t n = a.counts.sendCount;
  fillInput(a.input, n, a.rank * n, a.dtype, ReduceOp::SUM, a.seed, 0, 1);
  const int peer = (a.rank - 1 + a.nranks) % a.nranks;
  fillInput(a.expected, a.counts.recvCount, peer * a.counts.recvCount, a.dtype, ReduceOp::SUM,
            a.seed, 0, 1);
}

std::shared_ptr<Work> run(const RunArgs& a) {
  ProcessGroup& pg = *a.pg;
  if (pg.size() == 1) {  // a rank's peer is itself: a local copy
    a.copy(a.recv, a.send, a.count);
    return makeCompletedWork(OpType::kSend, pg.sequenceNumber(), pg.name());
  }
  std::vector<std::shared_ptr<Work>> parts;
  parts.push_back(pg.send(a.tensor(a.send, a.count), (pg.rank() + 1) % pg.size()));
  parts.push_back(pg.recv(a.tensor(a.recv, a.count), (pg.rank() - 1 + pg.size()) % pg.size()));
  return makeCompositeWork(std::move(parts), OpType::kRecv, pg.sequenceNumber(), pg.name(),
                           pg.options().timeout);
}

}  // namespace

const Collective kSendRecv{"SendRecv",
                           /*rooted=*/false,
                           /*reduces=*/false,
                           /*opColumn=*/true,
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
  return c10d::perf::perfMain(argc, argv, c10d::perf::kSendRecv);
}
#endif
