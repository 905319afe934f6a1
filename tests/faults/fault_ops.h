// Fault-injection suite: the collectives a rank runs while a fault is injected, each with the
// reference it is checked against.
//
// One CollectiveRun is one op on one rank: its buffers filled with values distinct per (rank,
// iteration, element), issued on a group, and after a successful wait compared with a reference
// computed here from the same formula (int32 SUM: exact in any reduction order). Rooted ops rotate
// their root with the iteration, so every rank is the root in turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

enum class Collective {
  kAllreduce,
  kAllreduceCoalesced,
  kBroadcast,
  kReduce,
  kAllgather,
  kAllgatherIntoTensor,
  kGather,
  kScatter,
  kReduceScatter,
  kReduceScatterTensor,
  kAlltoall,
  kAlltoallSingle,
  kBarrier,
};
constexpr int kNumCollectives = 13;

// The op's name as the runtime spells it in messages ("allreduce", "reduce_scatter_tensor").
const char* collectiveName(Collective c);

class CollectiveRun {
 public:
  // Buffers for op `c` on `rank` of `size`, iteration `iter`, `count` elements per rank.
  CollectiveRun(Collective c, int rank, int size, size_t count, int iter);
  // Issues the op (timeout: the op's own).
  std::shared_ptr<Work> issue(ProcessGroup& pg, Milliseconds timeout);
  // After a successful wait: "" when every output element is right, else the first mismatch.
  std::string verify() const;

 private:
  using Vec = std::vector<int32_t>;
  int root() const { return iter_ % size_; }
  static Tensor view(Vec& v) { return tensorOf(v.data(), v.size()); }
  static std::vector<Tensor> views(std::vector<Vec>& vs);

  const Collective c_;
  const int rank_;
  const int size_;
  const size_t n_;
  const int iter_;
  Vec a_, b_;                    // flat buffers (in-place tensor / input and output)
  std::vector<Vec> ins_, outs_;  // per-rank lists
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
