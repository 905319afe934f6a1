// The nine collective tables, one per perf/<op>_perf.cc (declared here so that tests can check
// their sizes and bandwidth factors without running them).
#pragma once

#include "c10d/base/abi.h"
#include "perf/common/collective.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

extern const Collective kAllReduce;
extern const Collective kAllGather;
extern const Collective kBroadcast;
extern const Collective kReduce;
extern const Collective kReduceScatter;
extern const Collective kAlltoAll;
extern const Collective kGather;
extern const Collective kScatter;
extern const Collective kSendRecv;

// nccl-tests' per-rank count for the collectives that split `count` over ranks: count / nranks,
// rounded down to a multiple of 16 bytes' worth of elements.
inline size_t perRankCount(size_t count, size_t eltSize, int nranks) {
  return (count / static_cast<size_t>(nranks)) & ~(16 / eltSize - 1);
}

// algbw = bytes / time in GB/s (1 GB = 1e9 bytes, as nccl-tests); busbw = algbw * factor.
inline void setBandwidth(double bytes, double sec, double factor, double* algBw, double* busBw) {
  *algBw = bytes / 1.0e9 / sec;
  *busBw = *algBw * factor;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
