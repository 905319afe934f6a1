// Algorithm selection for the verbs backend: one table, in one place, chosen by collective,
// message size, world size and whether all ranks share one host (shm workspace present).
//
// Default table (bytes = the tensor's size on one rank):
//   allreduce       shm workspace: "shm" (direct reduce from peers' slots; one sync per chunk,
//                   a single sync below C10D_SMALL_BYTES). Else (tcp / ibverbs), fewer elements
//                   than ranks: "recursive_doubling"; world size 4, 8, 16...: <= 32 KiB
//                   "recursive_doubling", <= 4 MiB "rabenseifner", else "ring"; other world
//                   sizes: <= 64 KiB "recursive_doubling", else "ring".
//   reduce_scatter  "ring"         allgather "ring"         reduce "binomial"
//   broadcast       shm workspace: "shm"; else <= 256 KiB: "binomial", else "chain" (pipelined)
//   gather/scatter  "direct"       alltoall "pairwise"
//   barrier         shm workspace: "shm" (futex barrier), else "dissemination"
// Why (allreduce over tcp, localhost, measured with all_reduce_perf; see the README's table):
// recursive doubling takes log2(n) steps but moves the whole buffer in each, so it wins while
// latency dominates (<= 32 KiB at 4 and 8 ranks). Ring moves the optimal 2(n-1)/n of the buffer in
// 2(n-1) steps; Rabenseifner moves the same amount in 2*log2(n) steps, which beat ring by up to 2x
// at 64 KiB (8 ranks) and matched or beat it up to 4 MiB; past that the two are within noise and
// ring, which only talks to neighbours, stays. With 2 ranks the three are the same exchange. For
// other world sizes the fold of the extra ranks costs Rabenseifner a whole-buffer transfer each
// way and it lost to ring (3 and 6 ranks), so the table keeps recursive doubling / ring there; it
// remains available as C10D_ALGO=allreduce:rabenseifner.
// C10D_ALGO=op:algo[,op:algo...] overrides an entry (e.g. allreduce:ring); an algorithm that
// cannot run in the current setting (e.g. "shm" without a workspace) falls back to the default.
//
// Pure logic; no threads.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>

namespace c10d {
namespace verbs {

struct VerbsConfig;

enum class Collective {
  kAllreduce,
  kReduceScatter,
  kAllgather,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAlltoall,
  kBarrier
};

enum class Algo {
  kShm,
  kRing,
  kRecursiveDoubling,
  kBinomial,
  kChain,
  kDirect,
  kPairwise,
  kDissemination,
  kRabenseifner
};

const char* toString(Collective c);
const char* toString(Algo a);

class AlgoSelector {
 public:
  explicit AlgoSelector(const VerbsConfig& cfg);

  // `bytes`: per-rank message size; `count`: elements; `shm`: a shm workspace spans the group.
  Algo select(Collective c, size_t bytes, size_t count, int worldSize, bool shm) const;

  // Parses "op:algo,..."; throws InvalidArgument naming the bad entry.
  static std::map<Collective, Algo> parseOverrides(const std::string& spec);

  void print(std::ostream& os) const;

 private:
  Algo byDefault(Collective c, size_t bytes, size_t count, int worldSize, bool shm) const;
  std::map<Collective, Algo> overrides_;
};

}  // namespace verbs
}  // namespace c10d
