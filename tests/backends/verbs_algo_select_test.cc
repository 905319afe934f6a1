// The verbs algorithm tables and their selector (c10d/backends/verbs/algorithms/algo_select.h): the
// default rules, C10D_ALGO rules with ranges and fall-through, malformed rules, table consistency.
// Pure logic: no processes.
#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

TEST(VerbsAlgoSelect, DefaultTableAndOverrides) {
  AlgoSelector def(VerbsConfig::load({{"C10D_ALGO", ""}}));
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, true), Algo::kShm);
  EXPECT_EQ(def.select(Collective::kAllreduce, 4096, 1024, 4, false), Algo::kRecursiveDoubling);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 24, 1 << 22, 3, false), Algo::kRing);
  // Past 32 KiB on 4, 8, 16.. ranks: Rabenseifner; not with a fold (6) nor with 2 ranks.
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 24, 1 << 22, 4, false), Algo::kRabenseifner);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 20, 1 << 18, 8, false), Algo::kRabenseifner);
  EXPECT_EQ(def.select(Collective::kAllreduce, 64 << 10, 16 << 10, 4, false), Algo::kRabenseifner);
  EXPECT_EQ(def.select(Collective::kAllreduce, 32 << 10, 8 << 10, 4, false),
            Algo::kRecursiveDoubling);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 20, 1 << 18, 6, false), Algo::kRing);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 20, 1 << 18, 2, false), Algo::kRing);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 20, 1 << 18, 8, true), Algo::kShm);
  EXPECT_EQ(def.select(Collective::kBroadcast, 1 << 24, 1 << 24, 4, false), Algo::kChain);
  EXPECT_EQ(def.select(Collective::kBarrier, 0, 0, 4, false), Algo::kDissemination);
  EXPECT_EQ(def.select(Collective::kReduce, 1 << 24, 1 << 22, 4, true), Algo::kShm);
  EXPECT_EQ(def.select(Collective::kReduce, 1 << 24, 1 << 22, 4, false), Algo::kBinomial);
  AlgoSelector o(VerbsConfig::load({{"C10D_ALGO", "allreduce:ring,barrier:shm"}}));
  EXPECT_EQ(o.select(Collective::kAllreduce, 8, 2, 4, true), Algo::kRing);
  // "shm" needs a workspace: falls back to the default without one.
  EXPECT_EQ(o.select(Collective::kBarrier, 0, 0, 4, false), Algo::kDissemination);
  AlgoSelector rab(VerbsConfig::load({{"C10D_ALGO", "allreduce:rabenseifner"}}));
  EXPECT_EQ(rab.select(Collective::kAllreduce, 8, 2, 5, false), Algo::kRabenseifner);
  EXPECT_EQ(rab.select(Collective::kAllreduce, 8, 2, 5, true), Algo::kRabenseifner);
  EXPECT_THROW(VerbsConfig::load({{"C10D_ALGO", "broadcast:rabenseifner"}}), InvalidArgument);
  // Across hosts with shared ones: hierarchical, unless an override says otherwise; forced on a
  // layout where it cannot help, it falls back to the flat default.
  EXPECT_EQ(def.select(Collective::kAllreduce, 8, 2, 4, false, true), Algo::kRecursiveDoubling);
  EXPECT_EQ(def.select(Collective::kAllreduce, 64 << 10, 16 << 10, 4, false, true),
            Algo::kRabenseifner);
  EXPECT_EQ(def.select(Collective::kAllreduce, (64 << 10) + 4, 16 << 10, 4, false, true),
            Algo::kHierarchical);
  EXPECT_EQ(def.select(Collective::kAllreduce, 1 << 24, 1 << 22, 4, false, true),
            Algo::kHierarchical);
  EXPECT_EQ(o.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, false, true), Algo::kRing);
  AlgoSelector hier(VerbsConfig::load({{"C10D_ALGO", "allreduce:hierarchical"}}));
  EXPECT_EQ(hier.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, false, true),
            Algo::kHierarchical);
  EXPECT_EQ(hier.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, false, false),
            Algo::kRabenseifner);
  EXPECT_EQ(hier.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, true, false), Algo::kShm);
  EXPECT_THROW(VerbsConfig::load({{"C10D_ALGO", "broadcast:hierarchical"}}), InvalidArgument);
  // Allgather and reduce_scatter: two-level across hosts at every size, the ring otherwise or
  // when forced.
  for (Collective coll : {Collective::kAllgather, Collective::kReduceScatter}) {
    for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 24}) {
      EXPECT_EQ(def.select(coll, bytes, bytes / 4, 4, false, true), Algo::kHierarchical) << bytes;
      EXPECT_EQ(def.select(coll, bytes, bytes / 4, 4, true, false), Algo::kRing) << bytes;
    }
  }
  AlgoSelector flat(VerbsConfig::load({{"C10D_ALGO", "allgather:ring,reduce_scatter:ring"}}));
  EXPECT_EQ(flat.select(Collective::kAllgather, 1 << 20, 1 << 18, 4, false, true), Algo::kRing);
  EXPECT_EQ(flat.select(Collective::kReduceScatter, 1 << 20, 1 << 18, 4, false, true), Algo::kRing);
}

// UCC-style ranges: [lo, hi) per rule, rules continuing the previous collective, the first rule
// that holds and can run wins, then the defaults.
TEST(VerbsAlgoSelect, RangesAndFallback) {
  AlgoSelector s(VerbsConfig::load(
      {{"C10D_ALGO", "allreduce:0-4K:recursive_doubling,4K-1M:ring,broadcast:64K-inf:chain"}}));
  EXPECT_EQ(s.select(Collective::kAllreduce, 0, 0, 4, false), Algo::kRecursiveDoubling);
  EXPECT_EQ(s.select(Collective::kAllreduce, 4095, 1023, 4, false), Algo::kRecursiveDoubling);
  EXPECT_EQ(s.select(Collective::kAllreduce, 4096, 1024, 4, false), Algo::kRing);
  EXPECT_EQ(s.select(Collective::kAllreduce, (1 << 20) - 4, 1024, 4, false), Algo::kRing);
  // Past the last range: the default (Rabenseifner at 4 ranks without a workspace).
  EXPECT_EQ(s.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, false), Algo::kRabenseifner);
  // Overrides win over a workspace; outside their range the default's shm does.
  EXPECT_EQ(s.select(Collective::kAllreduce, 4096, 1024, 4, true), Algo::kRing);
  EXPECT_EQ(s.select(Collective::kAllreduce, 1 << 20, 1 << 18, 4, true), Algo::kShm);
  EXPECT_EQ(s.select(Collective::kBroadcast, 64 << 10, 64 << 10, 3, true), Algo::kChain);
  EXPECT_EQ(s.select(Collective::kBroadcast, 1024, 1024, 3, false), Algo::kBinomial);
  // Earlier rules win where ranges overlap; a rule that cannot run is skipped for the next.
  AlgoSelector o(VerbsConfig::load({{"C10D_ALGO", "allreduce:shm,0-1M:ring,recursive_doubling"}}));
  EXPECT_EQ(o.select(Collective::kAllreduce, 4096, 1024, 4, true), Algo::kShm);
  EXPECT_EQ(o.select(Collective::kAllreduce, 4096, 1024, 4, false), Algo::kRing);
  EXPECT_EQ(o.select(Collective::kAllreduce, 2 << 20, 1 << 19, 4, false), Algo::kRecursiveDoubling);
  AlgoSelector k(VerbsConfig::load({{"C10D_ALGO", "reduce:0-1k:binomial,barrier:dissemination"}}));
  EXPECT_EQ(k.select(Collective::kReduce, 1023, 256, 2, true), Algo::kBinomial);
  EXPECT_EQ(k.select(Collective::kReduce, 1024, 256, 2, true), Algo::kShm);
  EXPECT_EQ(k.select(Collective::kBarrier, 0, 0, 2, true), Algo::kDissemination);

  // Each bad rule is refused naming itself and what is wrong.
  const std::pair<const char*, const char*> bad[] = {
      {"4K-inf:ring", "names no collective and follows none"},
      {"allreduce:4K-1K:ring", "is empty"},
      {"allreduce:4K-4K:ring", "is empty"},
      {"allreduce:0-4Q:ring", "is not a size in bytes"},
      {"allreduce:4K:ring", "is not a range lo-hi"},
      {"allreduce:0-4K:chain", "chain does not implement allreduce"},
      {"allreduce:0-4K:ring,0-8K:chain", "chain does not implement allreduce"},
      {"allreduce:0-4K:", "is not [collective:][lo-hi:]algorithm"},
      {"allreduce:0-4K:ring:extra", "is not [collective:][lo-hi:]algorithm"},
      {"broadcast", "names no algorithm"},
      {"bogus:ring", "unknown collective 'bogus'"},
      {"allreduce:fast", "unknown algorithm 'fast'"},
  };
  for (const auto& [spec, why] : bad) {
    try {
      AlgoSelector::parseOverrides(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << spec << ": " << e.what();
    }
  }
  EXPECT_EQ(formatRangeBound(32 << 10), "32K");
  EXPECT_EQ(formatRangeBound((32 << 10) + 1), "32769");
  EXPECT_EQ(formatRangeBound(3u << 20), "3M");
  EXPECT_EQ(formatRangeBound(SIZE_MAX), "inf");
}

// The tables are consistent: every collective has one, in enum order, its default rules name
// listed algorithms, each algorithm has a function, and the defaults that need nothing cover every
// size (so selection never fails, whatever the size, group or workspace).
TEST(VerbsAlgoSelect, TablesAreComplete) {
  AlgoSelector def(VerbsConfig::load({{"C10D_ALGO", ""}}));
  for (size_t i = 0; i < kNumCollectives; ++i) {
    const auto c = static_cast<Collective>(i);
    const CollectiveTable& t = algoTable(c);
    EXPECT_EQ(t.id, c);
    ASSERT_FALSE(t.algos.empty()) << toString(c);
    for (const AlgoEntry& e : t.algos) EXPECT_NE(e.fn, nullptr) << toString(e.id);
    for (const Rule& r : t.defaults) EXPECT_NE(t.find(r.algo), nullptr) << toString(c);
    // The rules of any shape whose algorithm needs nothing cover [0, inf) without a gap.
    std::vector<std::pair<size_t, size_t>> cover;
    for (const Rule& r : t.defaults)
      if (r.shape == Shape::kAny && t.find(r.algo)->needs == Needs::kNothing)
        cover.emplace_back(r.lo, r.hi);
    std::sort(cover.begin(), cover.end());
    size_t reach = 0;
    for (const auto& [lo, hi] : cover) {
      EXPECT_LE(lo, reach) << toString(c) << ": no default rule for [" << reach << ", " << lo
                           << ")";
      reach = std::max(reach, hi);
    }
    EXPECT_EQ(reach, SIZE_MAX) << toString(c);
    for (int ws : {2, 3, 4, 8})
      for (size_t bytes : {size_t{0}, size_t{1}, size_t{1} << 20, SIZE_MAX - 1})
        for (bool shm : {false, true})
          for (bool multiHost : {false, true})
            EXPECT_NO_THROW(def.select(c, bytes, bytes, ws, shm, multiHost)) << toString(c);
  }
  std::ostringstream os;
  def.print(os);
  // The printout comes from the data: every collective and each of its algorithms appear.
  for (size_t i = 0; i < kNumCollectives; ++i) {
    const auto c = static_cast<Collective>(i);
    EXPECT_NE(os.str().find(std::string("  ") + toString(c) + "\n"), std::string::npos);
    for (const AlgoEntry& e : algoTable(c).algos)
      EXPECT_NE(os.str().find(std::string("algorithm ") + toString(e.id) + ":"), std::string::npos);
  }
  EXPECT_NE(os.str().find("default:  32769-inf 4, 8, 16.. ranks -> rabenseifner"),
            std::string::npos)
      << os.str();
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
