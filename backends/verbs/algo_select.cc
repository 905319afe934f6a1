#include "backends/verbs/algo_select.h"

#include <sstream>

#include "backends/verbs/config.h"
#include "c10d/error.h"

namespace c10d {
namespace verbs {

namespace {
constexpr size_t kRecursiveDoublingMax = 64 << 10;
// Power-of-two groups of 4+ ranks: recursive doubling up to here, Rabenseifner above
// (measurements in algo_select.h).
constexpr size_t kRecursiveDoublingPow2Max = 32 << 10;

constexpr size_t kBinomialBroadcastMax = 256 << 10;

// Groups across hosts: the hierarchical allreduce above this size (scripts/hier-perf.sh over a
// veth pair: at 64 KiB the flat ring's fewer steps win; from 256 KiB up the hierarchical one moved
// 1.2-1.4x faster at 2 hosts x 2 ranks).
constexpr size_t kHierarchicalMin = 64 << 10;

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

const Collective kAllCollectives[] = {
    Collective::kAllreduce, Collective::kReduceScatter, Collective::kAllgather,
    Collective::kBroadcast, Collective::kReduce,        Collective::kGather,
    Collective::kScatter,   Collective::kAlltoall,      Collective::kBarrier};
const Algo kAllAlgos[] = {Algo::kShm,         Algo::kRing,          Algo::kRecursiveDoubling,
                          Algo::kBinomial,    Algo::kChain,         Algo::kDirect,
                          Algo::kPairwise,    Algo::kDissemination, Algo::kRabenseifner,
                          Algo::kHierarchical};

// Which algorithms implement which collective.
bool implements(Collective c, Algo a) {
  switch (c) {
    case Collective::kAllreduce:
      return a == Algo::kShm || a == Algo::kRing || a == Algo::kRecursiveDoubling ||
             a == Algo::kRabenseifner || a == Algo::kHierarchical;
    case Collective::kReduceScatter:
    case Collective::kAllgather:
      return a == Algo::kRing;
    case Collective::kBroadcast:
      return a == Algo::kShm || a == Algo::kBinomial || a == Algo::kChain;
    case Collective::kReduce:
      return a == Algo::kShm || a == Algo::kBinomial;
    case Collective::kGather:
    case Collective::kScatter:
      return a == Algo::kDirect;
    case Collective::kAlltoall:
      return a == Algo::kPairwise;
    case Collective::kBarrier:
      return a == Algo::kShm || a == Algo::kDissemination;
  }
  return false;
}
}  // namespace

const char* toString(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kBarrier:
      return "barrier";
  }
  return "?";
}

const char* toString(Algo a) {
  switch (a) {
    case Algo::kShm:
      return "shm";
    case Algo::kRing:
      return "ring";
    case Algo::kRecursiveDoubling:
      return "recursive_doubling";
    case Algo::kBinomial:
      return "binomial";
    case Algo::kChain:
      return "chain";
    case Algo::kDirect:
      return "direct";
    case Algo::kPairwise:
      return "pairwise";
    case Algo::kDissemination:
      return "dissemination";
    case Algo::kRabenseifner:
      return "rabenseifner";
    case Algo::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

AlgoSelector::AlgoSelector(const VerbsConfig& cfg) : overrides_(parseOverrides(cfg.algo)) {}

std::map<Collective, Algo> AlgoSelector::parseOverrides(const std::string& spec) {
  std::map<Collective, Algo> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    C10D_CHECK_ARG(colon != std::string::npos, "C10D_ALGO entry '", item,
                   "' is not op:algo (e.g. allreduce:ring)");
    std::string op = item.substr(0, colon), algo = item.substr(colon + 1);
    bool found = false;
    for (Collective c : kAllCollectives) {
      if (op != toString(c)) continue;
      for (Algo a : kAllAlgos) {
        if (algo != toString(a)) continue;
        C10D_CHECK_ARG(implements(c, a), "C10D_ALGO entry '", item, "': ", algo,
                       " does not implement ", op);
        out[c] = a;
        found = true;
      }
      C10D_CHECK_ARG(found, "C10D_ALGO entry '", item, "': unknown algorithm '", algo, "'");
    }
    C10D_CHECK_ARG(found, "C10D_ALGO entry '", item, "': unknown collective '", op, "'");
  }
  return out;
}

Algo AlgoSelector::byDefault(Collective c, size_t bytes, size_t count, int worldSize, bool shm,
                             bool multiHost) const {
  switch (c) {
    case Collective::kAllreduce:
      if (shm) return Algo::kShm;
      if (multiHost && bytes > kHierarchicalMin) return Algo::kHierarchical;
      if (count < static_cast<size_t>(worldSize)) return Algo::kRecursiveDoubling;
      if (worldSize >= 4 && isPowerOfTwo(worldSize))
        return bytes <= kRecursiveDoublingPow2Max ? Algo::kRecursiveDoubling : Algo::kRabenseifner;
      return bytes <= kRecursiveDoublingMax ? Algo::kRecursiveDoubling : Algo::kRing;
    case Collective::kReduceScatter:
    case Collective::kAllgather:
      return Algo::kRing;
    case Collective::kBroadcast:
      if (shm) return Algo::kShm;
      return bytes <= kBinomialBroadcastMax ? Algo::kBinomial : Algo::kChain;
    case Collective::kReduce:
      return shm ? Algo::kShm : Algo::kBinomial;
    case Collective::kGather:
    case Collective::kScatter:
      return Algo::kDirect;
    case Collective::kAlltoall:
      return Algo::kPairwise;
    case Collective::kBarrier:
      return shm ? Algo::kShm : Algo::kDissemination;
  }
  return Algo::kRing;
}

Algo AlgoSelector::select(Collective c, size_t bytes, size_t count, int worldSize, bool shm,
                          bool multiHost) const {
  auto it = overrides_.find(c);
  // An override that cannot run here (shm without a workspace, hierarchical on one host) falls
  // back to the default.
  if (it != overrides_.end() && (it->second != Algo::kShm || shm) &&
      (it->second != Algo::kHierarchical || multiHost))
    return it->second;
  return byDefault(c, bytes, count, worldSize, shm, multiHost);
}

void AlgoSelector::print(std::ostream& os) const {
  os << "verbs algorithm table (C10D_ALGO=op:algo overrides):\n"
     << "  allreduce      shm workspace: shm (1 sync/chunk; 1 sync below C10D_SMALL_BYTES);\n"
     << "                 several hosts, some with several ranks: > 64 KiB hierarchical (shm\n"
     << "                 inside hosts, the flat algorithm below between them);\n"
     << "                 else 4, 8, 16.. ranks: <= 32 KiB recursive_doubling, else\n"
     << "                 rabenseifner; other sizes: <= 64 KiB recursive_doubling, else ring\n"
     << "  broadcast      shm workspace: shm; else <= 256 KiB: binomial; else chain\n"
     << "  reduce         shm workspace: shm (others copy into slots, the root reduces them\n"
     << "                 with its input into the output); else binomial\n"
     << "  reduce_scatter ring   allgather ring   gather/scatter direct\n"
     << "  alltoall       pairwise   barrier: shm workspace: shm, else dissemination\n";
  for (const auto& kv : overrides_)
    os << "  override: " << toString(kv.first) << " -> " << toString(kv.second) << "\n";
}

}  // namespace verbs
}  // namespace c10d
