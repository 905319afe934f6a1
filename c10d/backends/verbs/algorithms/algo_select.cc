#include "c10d/backends/verbs/algorithms/algo_select.h"

#include <sstream>

#include "c10d/backends/verbs/comm.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

constexpr const char* kCollectiveNames[kNumCollectives] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "gather",    "scatter",        "alltoall",  "barrier"};
constexpr const char* kAlgoNames[kNumAlgos] = {
    "shm",    "ring",     "recursive_doubling", "binomial",     "chain",
    "direct", "pairwise", "dissemination",      "rabenseifner", "hierarchical"};

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

bool canRun(Needs n, const SelectCtx& ctx) {
  switch (n) {
    case Needs::kNothing:
      return true;
    case Needs::kShm:
      return ctx.shm;
    case Needs::kMultiHost:
      return ctx.multiHost;
  }
  return false;
}

const char* describe(Needs n) {
  switch (n) {
    case Needs::kNothing:
      return "";
    case Needs::kShm:
      return " [needs a shm workspace]";
    case Needs::kMultiHost:
      return " [needs hosts with several ranks]";
  }
  return "";
}

const char* describe(Shape s) {
  switch (s) {
    case Shape::kAny:
      return "";
    case Shape::kFewerElementsThanRanks:
      return " fewer elements than ranks";
    case Shape::kPowerOfTwoFromFour:
      return " 4, 8, 16.. ranks";
  }
  return "";
}

bool parseCollective(const std::string& s, Collective* c) {
  for (size_t i = 0; i < kNumCollectives; ++i) {
    if (s == kCollectiveNames[i]) {
      *c = static_cast<Collective>(i);
      return true;
    }
  }
  return false;
}

size_t parseBound(const std::string& s, const std::string& rule) {
  if (s == "inf") return SIZE_MAX;
  return parseBytesSetting(s, "C10D_ALGO rule '" + rule + "': range bound");
}

void printRange(std::ostream& os, size_t lo, size_t hi) {
  os << formatRangeBound(lo) << "-" << formatRangeBound(hi);
}

}  // namespace

const char* toString(Collective c) {
  const auto i = static_cast<size_t>(c);
  return i < kNumCollectives ? kCollectiveNames[i] : "?";
}

const char* toString(Algo a) {
  const auto i = static_cast<size_t>(a);
  return i < kNumAlgos ? kAlgoNames[i] : "?";
}

std::string formatRangeBound(size_t bytes) {
  if (bytes == SIZE_MAX) return "inf";
  static const struct {
    int shift;
    const char* suffix;
  } kUnits[] = {{30, "G"}, {20, "M"}, {10, "K"}};
  for (const auto& u : kUnits) {
    const size_t unit = size_t{1} << u.shift;
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + u.suffix;
  }
  return std::to_string(bytes);
}

bool Rule::holds(const SelectCtx& ctx) const {
  if (ctx.bytes < lo || ctx.bytes >= hi) return false;
  switch (shape) {
    case Shape::kAny:
      return true;
    case Shape::kFewerElementsThanRanks:
      return ctx.count < static_cast<size_t>(ctx.worldSize);
    case Shape::kPowerOfTwoFromFour:
      return ctx.worldSize >= 4 && isPowerOfTwo(ctx.worldSize);
  }
  return false;
}

const AlgoEntry* CollectiveTable::find(Algo a) const {
  for (const AlgoEntry& e : algos)
    if (e.id == a) return &e;
  return nullptr;
}

AlgoSelector::AlgoSelector(const VerbsConfig& cfg) : overrides_(parseOverrides(cfg.algo)) {}

AlgoSelector::Overrides AlgoSelector::parseOverrides(const std::string& spec) {
  Overrides out;
  std::stringstream ss(spec);
  std::string rule;
  bool haveCollective = false;
  Collective c = Collective::kAllreduce;
  while (std::getline(ss, rule, ',')) {
    if (rule.empty()) continue;
    std::vector<std::string> parts;
    std::stringstream rs(rule);
    for (std::string p; std::getline(rs, p, ':');) parts.push_back(p);
    C10D_CHECK_ARG(
        !parts.empty() && parts.size() <= 3 && rule.back() != ':', "C10D_ALGO rule '", rule,
        "' is not [collective:][lo-hi:]algorithm (e.g. allreduce:ring, allreduce:0-4K:ring)");
    Collective named;
    C10D_CHECK_ARG(parts.size() > 1 || !parseCollective(parts[0], &named), "C10D_ALGO rule '", rule,
                   "' names no algorithm (e.g. ", rule, ":ring)");
    size_t i = 0;
    // Two parts: collective:algorithm, or range:algorithm continuing the previous collective.
    if (parts.size() == 3 || (parts.size() == 2 && parts[0].find('-') == std::string::npos)) {
      C10D_CHECK_ARG(parseCollective(parts[0], &c), "C10D_ALGO rule '", rule,
                     "': unknown collective '", parts[0], "'");
      haveCollective = true;
      i = 1;
    }
    C10D_CHECK_ARG(haveCollective, "C10D_ALGO rule '", rule,
                   "' names no collective and follows none (e.g. allreduce:",
                   parts.size() == 1 ? "" : "0-4K:", parts.back(), ")");
    Rule r;
    if (parts.size() - i == 2) {
      const std::string& range = parts[i];
      const size_t dash = range.find('-');
      C10D_CHECK_ARG(dash != std::string::npos, "C10D_ALGO rule '", rule, "': '", range,
                     "' is not a range lo-hi (e.g. 0-4K, 4K-inf)");
      r.lo = parseBound(range.substr(0, dash), rule);
      r.hi = parseBound(range.substr(dash + 1), rule);
      C10D_CHECK_ARG(r.lo < r.hi, "C10D_ALGO rule '", rule, "': the range ", range,
                     " is empty (lo must be below hi; ranges are [lo, hi))");
    }
    const std::string& algo = parts.back();
    bool known = false;
    for (size_t a = 0; a < kNumAlgos && !known; ++a) {
      if (algo != kAlgoNames[a]) continue;
      known = true;
      r.algo = static_cast<Algo>(a);
    }
    C10D_CHECK_ARG(known, "C10D_ALGO rule '", rule, "': unknown algorithm '", algo, "'");
    C10D_CHECK_ARG(algoTable(c).find(r.algo) != nullptr, "C10D_ALGO rule '", rule, "': ", algo,
                   " does not implement ", toString(c));
    out[static_cast<size_t>(c)].push_back(r);
  }
  return out;
}

const AlgoEntry& AlgoSelector::pick(Collective c, const SelectCtx& ctx) const {
  const CollectiveTable& t = algoTable(c);
  for (const Rule& r : overrides_[static_cast<size_t>(c)]) {
    const AlgoEntry* e = t.find(r.algo);
    if (r.holds(ctx) && canRun(e->needs, ctx)) return *e;
  }
  for (const Rule& r : t.defaults) {
    const AlgoEntry* e = t.find(r.algo);
    if (r.holds(ctx) && canRun(e->needs, ctx)) return *e;
  }
  C10D_THROW(Error, "verbs: no default rule of ", toString(c), " holds for ", ctx.bytes,
             " bytes on ", ctx.worldSize, " ranks");
}

void AlgoSelector::run(Collective c, Comm& comm, const CollArgs& a) const {
  const SelectCtx ctx{a.bytes, a.count, comm.size(), comm.slots() != nullptr,
                      comm.hosts() != nullptr && comm.hosts()->multiHost};
  pick(c, ctx).fn(comm, a, *this);
}

void AlgoSelector::print(std::ostream& os) const {
  os << "verbs algorithm table (first rule that holds and can run; C10D_ALGO rules first;\n"
     << "ranges [lo, hi) bytes per rank):\n";
  for (size_t i = 0; i < kNumCollectives; ++i) {
    const CollectiveTable& t = algoTable(static_cast<Collective>(i));
    os << "  " << kCollectiveNames[i] << "\n";
    for (const AlgoEntry& e : t.algos)
      os << "    algorithm " << toString(e.id) << ": " << e.what << describe(e.needs) << "\n";
    for (const Rule& r : overrides_[i]) {
      os << "    override: ";
      printRange(os, r.lo, r.hi);
      os << " -> " << toString(r.algo) << "\n";
    }
    for (const Rule& r : t.defaults) {
      os << "    default:  ";
      printRange(os, r.lo, r.hi);
      os << describe(r.shape) << " -> " << toString(r.algo) << "\n";
    }
  }
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
