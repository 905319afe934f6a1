// Algorithm selection for the verbs backend: one table, in one place, chosen by collective,
// message size, world size and whether all ranks share one host (shm workspace present).
//
// Default table (bytes = the tensor's size on one rank):
//   allreduce       shm workspace: "shm" (direct reduce from peers' slots; one sync per chunk,
//                   a single sync below C10D_SMALL_BYTES). Ranks on several hosts with some host
//                   holding several, > 64 KiB: "hierarchical" (shm inside hosts, the network
//                   across; see allreduce_hierarchical.cc). Else (tcp / ibverbs), fewer elements
//                   than ranks: "recursive_doubling"; world size 4, 8, 16...: <= 32 KiB
//                   "recursive_doubling", else "rabenseifner"; other world sizes (2, 3, 5, 6..):
//                   <= 64 KiB "recursive_doubling", else "ring".
//   reduce_scatter  "ring"         allgather "ring"         reduce "binomial"
//   broadcast       shm workspace: "shm"; else <= 256 KiB: "binomial", else "chain" (pipelined)
//   gather/scatter  "direct"       alltoall "pairwise"
//   barrier         shm workspace: "shm" (futex barrier), else "dissemination"
// Why (allreduce over tcp, localhost, 2 cores, all_reduce_perf; the README has the numbers):
// recursive doubling takes log2(n) steps but moves the whole buffer in each, so it wins while
// latency dominates (<= 32 KiB at 4 and 8 ranks, <= 64 KiB at 3 and 6). Ring moves the optimal
// 2(n-1)/n of the buffer in 2(n-1) steps; Rabenseifner moves the same amount in 2*log2(n) steps:
// at 8 ranks it beat ring by up to 1.7x at 64 KiB..1 MiB (tied at 4 ranks), at 4 and 8 ranks it
// matched or beat it above (9 of 11 runs x sizes from 4 to 32 MiB; run-to-run noise on this shared
// machine is +-30%), and it beat recursive doubling from 64 KiB. With 2 ranks ring and
// Rabenseifner are the same exchange. For other world sizes the fold of the extra ranks costs
// Rabenseifner a whole-buffer transfer each way and it lost to ring (3, 6 ranks), so the table
// keeps recursive doubling / ring there (C10D_ALGO=allreduce:rabenseifner still works).
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
  kRabenseifner,
  kHierarchical
};

const char* toString(Collective c);
const char* toString(Algo a);

class AlgoSelector {
 public:
  explicit AlgoSelector(const VerbsConfig& cfg);

  // `bytes`: per-rank message size; `count`: elements; `shm`: a shm workspace spans the group;
  // `multiHost`: the group spans hosts and some host has several ranks (HostLayout::multiHost).
  Algo select(Collective c, size_t bytes, size_t count, int worldSize, bool shm,
              bool multiHost = false) const;

  // Parses "op:algo,..."; throws InvalidArgument naming the bad entry.
  static std::map<Collective, Algo> parseOverrides(const std::string& spec);

  void print(std::ostream& os) const;

 private:
  Algo byDefault(Collective c, size_t bytes, size_t count, int worldSize, bool shm,
                 bool multiHost) const;
  std::map<Collective, Algo> overrides_;
};

}  // namespace verbs
}  // namespace c10d
