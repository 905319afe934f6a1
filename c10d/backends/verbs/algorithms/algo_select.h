// Algorithm selection for the verbs backend, as data. One table per collective (algo_table.cc)
// lists the algorithms that implement it (name, what it does, what it needs to run, the function
// that runs it) and its default rules (size range, group shape, algorithm). The same tables drive
// selection, dispatch (AlgoSelector::run), --print-config and the C10D_ALGO overrides; nothing
// else names an algorithm.
//
// Selection for a call moving `bytes` (the tensor's size on one rank): the first C10D_ALGO rule of
// the collective whose range holds `bytes` and whose algorithm can run here; else the first
// default rule whose group shape matches, whose range holds `bytes` and whose algorithm can run.
// "Can run": "shm" needs a shared-memory workspace spanning the group, "hierarchical" a group
// across hosts of which some hold several ranks; a rule naming one where it cannot run is skipped
// (so a forced algorithm falls back to the default instead of failing).
//
// C10D_ALGO: comma-separated rules `[collective:][lo-hi:]algorithm`. Ranges are UCC-style and
// half-open, [lo, hi) bytes, with K/M/G suffixes (powers of 1024) and `inf`; no range means every
// size; a rule without a collective continues the previous rule's collective; where ranges
// overlap the earlier rule wins. Examples:
//   C10D_ALGO=allreduce:ring
//   C10D_ALGO=allreduce:0-4K:recursive_doubling,4K-inf:ring,broadcast:chain
//
// Default table (bytes per rank; `AlgoSelector::print` writes it from the data):
//   allreduce       shm where a workspace spans the group (direct reduce from peers' slots; one
//                   sync per chunk, a single sync below C10D_SMALL_BYTES); groups across hosts
//                   with shared ones, > 64 KiB: hierarchical (shm inside hosts, the network
//                   across; allreduce_hierarchical.cc); else (tcp / ibverbs) fewer elements than
//                   ranks: recursive_doubling; 4, 8, 16.. ranks: <= 32 KiB recursive_doubling,
//                   else rabenseifner; other world sizes: <= 64 KiB recursive_doubling, else ring.
//   reduce_scatter  ring           allgather ring           reduce shm, else binomial
//   broadcast       shm; else <= 256 KiB binomial, else chain (pipelined)
//   gather/scatter  direct         alltoall pairwise        barrier shm, else dissemination
// Why (allreduce over tcp; the crossovers are measured, docs/performance.md): recursive doubling
// takes log2(n) steps but moves the whole buffer in each, so it wins while latency dominates
// (<= 32 KiB at 4 and 8 ranks, <= 64 KiB at 3 and 6). Ring moves the optimal 2(n-1)/n of the
// buffer in 2(n-1) steps; Rabenseifner moves the same amount in only 2*log2(n) steps, so it takes
// over above 32 KiB at 4, 8, 16.. ranks (with 2 ranks it is ring's exchange). At other world
// sizes the fold of the extra ranks costs Rabenseifner a whole-buffer transfer each way, so the
// table keeps recursive doubling / ring there (C10D_ALGO=allreduce:rabenseifner still works).
//
// Selection is pure logic (no threads); the tables are immutable after static initialization.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

struct VerbsConfig;
class Comm;
class AlgoSelector;

enum class Collective : uint8_t {
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
constexpr size_t kNumCollectives = 9;

enum class Algo : uint8_t {
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
constexpr size_t kNumAlgos = 10;

const char* toString(Collective c);
const char* toString(Algo a);

// What an algorithm needs besides a group of connected peers.
enum class Needs : uint8_t {
  kNothing,
  kShm,        // a shared-memory workspace spanning the group
  kMultiHost,  // the group spans hosts and some host holds several ranks (HostLayout::multiHost)
};

// The group shapes a default rule can ask for.
enum class Shape : uint8_t {
  kAny,
  kFewerElementsThanRanks,  // count < world size
  kPowerOfTwoFromFour,      // world size 4, 8, 16, ...
};

// What selection looks at.
struct SelectCtx {
  size_t bytes = 0;  // per-rank message bytes
  size_t count = 0;  // elements
  int worldSize = 1;
  bool shm = false;
  bool multiHost = false;
};

// One call's arguments (UCC's coll_args in small); each collective reads the fields it uses.
struct CollArgs {
  const void* in = nullptr;  // allreduce / reduce / gather input
  void* out = nullptr;  // allreduce / reduce / scatter / reduce_scatter output; broadcast's data
  size_t count = 0;     // elements (allreduce, reduce, reduce_scatter's block)
  size_t bytes = 0;     // per-rank bytes (selection; broadcast, gather, scatter)
  DataType dtype = DataType::kFloat32;
  ReduceOp op;  // as the caller gave it (PREMUL_SUM / AVG included)
  int root = 0;
  size_t smallBytes = 0;      // C10D_SMALL_BYTES (the shm allreduce's single-sync threshold)
  bool halfAccumF32 = false;  // C10D_HALF_ACCUM=f32: see wide() below
  // Block collectives: the caller's per-rank blocks and their sizes.
  const std::vector<const void*>* inBlocks = nullptr;  // reduce_scatter, scatter, alltoall
  const std::vector<void*>* outBlocks = nullptr;       // allgather, gather, alltoall
  const std::vector<size_t>* inBlockBytes = nullptr;   // alltoall
  const std::vector<size_t>* outBlockBytes = nullptr;  // allgather, alltoall
  const std::function<void(void*, const void*, size_t)>* scaleCopy = nullptr;  // reduce_scatter

  // A f16/bf16 sum (SUM, AVG, PREMUL_SUM) kept in f32 and rounded once (reduce_kernels.h).
  bool wide() const {
    return halfAccumF32 && (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) &&
           (op.kind == ReduceOp::SUM || op.kind == ReduceOp::AVG ||
            op.kind == ReduceOp::PREMUL_SUM);
  }

  // The arguments of a reduction (allreduce, reduce) of `count` elements from `in` into `out`.
  static CollArgs reduction(const void* in, void* out, size_t count, DataType dtype,
                            const ReduceOp& op) {
    CollArgs a;
    a.in = in;
    a.out = out;
    a.count = count;
    a.bytes = count * elementSize(dtype);
    a.dtype = dtype;
    a.op = op;
    return a;
  }
};

using AlgoFn = void (*)(Comm& c, const CollArgs& a, const AlgoSelector& sel);

struct AlgoEntry {
  Algo id;
  Needs needs;
  AlgoFn fn;
  const char* what;  // one line for --print-config
};

// A selection rule: `algo` for bytes in [lo, hi) on groups of `shape`.
struct Rule {
  size_t lo = 0;
  size_t hi = SIZE_MAX;  // SIZE_MAX: no upper bound ("inf")
  Algo algo = Algo::kRing;
  Shape shape = Shape::kAny;
  bool holds(const SelectCtx& ctx) const;
};

struct CollectiveTable {
  Collective id;
  std::vector<AlgoEntry> algos;  // the algorithms that implement it
  // In order. The rules of Shape::kAny whose algorithm needs nothing cover every size, so some
  // default always holds and can run.
  std::vector<Rule> defaults;
  const AlgoEntry* find(Algo a) const;
};

// The table of one collective (algo_table.cc).
const CollectiveTable& algoTable(Collective c);

class AlgoSelector {
 public:
  using Overrides = std::array<std::vector<Rule>, kNumCollectives>;

  explicit AlgoSelector(const VerbsConfig& cfg);

  // The algorithm the rules pick for `ctx` (see the top of this file).
  const AlgoEntry& pick(Collective c, const SelectCtx& ctx) const;
  Algo select(Collective c, size_t bytes, size_t count, int worldSize, bool shm,
              bool multiHost = false) const {
    return pick(c, SelectCtx{bytes, count, worldSize, shm, multiHost}).id;
  }
  // Picks for this Comm (its size, workspace and host layout; a.bytes, a.count) and runs it.
  void run(Collective c, Comm& comm, const CollArgs& a) const;

  // Parses C10D_ALGO (see the top of this file); throws InvalidArgument naming the bad rule.
  static Overrides parseOverrides(const std::string& spec);

  // The tables, the default rules and the overrides in force.
  void print(std::ostream& os) const;

 private:
  Overrides overrides_;
};

// "32K", "1M", "inf", "65537": a byte count as the rules write it.
std::string formatRangeBound(size_t bytes);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
