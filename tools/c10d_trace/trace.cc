#include "tools/c10d_trace/trace.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace trace {

namespace {

using nlohmann::json;

template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}

// Field access that names the file, the place and the field when something is off.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const json& field(const char* name, json::value_t t) const {
    if (!j_.is_object()) throw TraceError(where_ + ": expected a JSON object");
    auto it = j_.find(name);
    if (it == j_.end()) throw TraceError(str(where_, ": missing field '", name, "'"));
    const bool ok = t == json::value_t::number_unsigned  ? it->is_number_unsigned()
                    : t == json::value_t::number_integer ? it->is_number_integer()
                                                         : it->type() == t;
    if (!ok) {
      throw TraceError(str(where_, ": field '", name, "' is ", it->type_name(), ", expected ",
                           t == json::value_t::number_unsigned  ? "an unsigned integer"
                           : t == json::value_t::number_integer ? "an integer"
                           : t == json::value_t::string         ? "a string"
                           : t == json::value_t::array          ? "an array"
                                                                : "an object"));
    }
    return *it;
  }
  std::string string(const char* n) const {
    return field(n, json::value_t::string).get<std::string>();
  }
  uint64_t u64(const char* n) const {
    return field(n, json::value_t::number_unsigned).get<uint64_t>();
  }
  int64_t i64(const char* n) const {
    return field(n, json::value_t::number_integer).get<int64_t>();
  }
  std::vector<uint64_t> counts(const char* n) const {
    std::vector<uint64_t> v;
    for (const json& x : field(n, json::value_t::array)) {
      if (!x.is_number_unsigned()) throw TraceError(str(where_, ": '", n, "' holds a non-count"));
      v.push_back(x.get<uint64_t>());
    }
    return v;
  }

 private:
  const json& j_;
  const std::string where_;
};

const std::set<std::string> kStates = {"issued", "started", "completed", "failed"};
constexpr int64_t kMaxRanks = int64_t{1} << 20;

std::string ranksText(std::vector<int> r) {
  std::sort(r.begin(), r.end());
  std::string s = r.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    s += (i ? ", " : "") + std::to_string(r[i]);
    if (j > i) s += (j == i + 1 ? ", " : "-") + std::to_string(r[j]);
    i = j + 1;
  }
  return s;
}

bool isDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string Entry::describe() const {
  std::string s = str(op, " #", seq, " (");
  if (op == "barrier") {
    s += "no data";
  } else if (!sendCounts.empty() || !recvCounts.empty()) {
    s += dtype + ", sends [";
    for (size_t i = 0; i < sendCounts.size(); ++i)
      s += (i ? "," : "") + std::to_string(sendCounts[i]);
    s += "]";
  } else {
    s += str(dtype, " x ", count);
  }
  if (tensors > 0) s += str(", ", tensors, " tensors");
  if (root >= 0) s += str(", root ", root);
  if (peer >= 0) s += str(", peer ", peer);
  if (!reduceOp.empty()) s += ", " + reduceOp;
  return s + ")";
}

std::string Entry::signature() const {
  if (p2p()) return "";
  return str(op, "|", dtype, "|", count, "|", tensors, "|", root, "|", reduceOp);
}

Dump parseDump(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (406)
    throw TraceError(str(path, ": not valid JSON (", e.what(), ")"));
  }
  Reader top(j, path);
  if (top.string("format") != "c10d-flight-recorder") {
    throw TraceError(str(path, ": field 'format' is '", top.string("format"),
                         "', expected 'c10d-flight-recorder' (not a c10d flight record)"));
  }
  if (top.u64("version") != 1) {
    throw TraceError(str(path, ": version ", top.u64("version"), " (this tool reads version 1)"));
  }
  Dump d;
  d.path = path;
  d.group = top.string("group");
  d.backend = top.string("backend");
  d.host = top.string("host");
  d.reason = top.string("reason");
  const int64_t rank = top.i64("rank");
  const int64_t size = top.i64("size");
  d.pid = top.i64("pid");
  d.dumpedUs = top.i64("dumped_us");
  d.capacity = top.u64("capacity");
  d.recorded = top.u64("recorded");
  if (size < 1 || rank < 0 || rank >= size) {
    throw TraceError(str(path, ": rank ", rank, " is out of range for size ", size));
  }
  // The analysis goes over every rank of the group: a size no job has is a corrupt dump, not a
  // reason to run for hours.
  if (size > kMaxRanks) {
    throw TraceError(str(path, ": size ", size, " is beyond the ", kMaxRanks,
                         " ranks a group of this tool can have (a corrupt dump?)"));
  }
  d.rank = static_cast<int>(rank);
  d.size = static_cast<int>(size);
  const json& entries = top.field("entries", json::value_t::array);
  uint64_t prevSeq = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    Reader r(entries[i], str(path, ": entries[", i, "]"));
    Entry e;
    e.seq = r.u64("seq");
    e.collSeq = r.u64("coll_seq");
    e.op = r.string("op");
    e.dtype = r.string("dtype");
    e.count = r.u64("count");
    e.tensors = r.u64("tensors");
    e.root = r.i64("root");
    e.peer = r.i64("peer");
    e.reduceOp = r.string("reduce_op");
    e.sendCounts = r.counts("send_counts");
    e.recvCounts = r.counts("recv_counts");
    e.state = r.string("state");
    e.issueUs = r.i64("issue_us");
    e.startUs = r.i64("start_us");
    e.endUs = r.i64("end_us");
    e.error = r.string("error");
    if (!kStates.count(e.state)) {
      throw TraceError(str(path, ": entries[", i, "]: state '", e.state,
                           "' (expected issued, started, completed or failed)"));
    }
    if (i > 0 && e.seq <= prevSeq) {
      throw TraceError(str(path, ": entries[", i, "]: seq ", e.seq, " after seq ", prevSeq,
                           " (entries must be in issue order)"));
    }
    prevSeq = e.seq;
    d.entries.push_back(std::move(e));
  }
  return d;
}

std::vector<Dump> loadDumps(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (!isDir(p)) {
      files.push_back(p);
      continue;
    }
    DIR* dir = ::opendir(p.c_str());
    if (dir == nullptr) throw TraceError(p + ": cannot open the directory");
    std::vector<std::string> found;
    while (dirent* ent = ::readdir(dir)) {
      std::string name = ent->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
        found.push_back(p + "/" + name);
      }
    }
    ::closedir(dir);
    if (found.empty()) throw TraceError(p + ": no *.json flight records in this directory");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  std::vector<Dump> dumps;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw TraceError(f + ": cannot read the file");
    std::stringstream ss;
    ss << in.rdbuf();
    dumps.push_back(parseDump(ss.str(), f));
  }
  return dumps;
}

namespace {

Report analyzeGroup(const std::vector<const Dump*>& dumps) {
  Report rep;
  rep.group = dumps[0]->group;
  rep.size = dumps[0]->size;
  std::map<int, const Dump*> byRank;
  for (const Dump* d : dumps) {
    if (d->size != rep.size) {
      throw TraceError(str(d->path, ": group ", rep.group, " has size ", d->size, " but ",
                           dumps[0]->path, " says ", rep.size));
    }
    auto [it, fresh] = byRank.emplace(d->rank, d);
    if (!fresh) {
      throw TraceError(str("two dumps of rank ", d->rank, " of group ", rep.group, ": ",
                           it->second->path, " and ", d->path));
    }
  }
  for (int r = 0; r < rep.size; ++r) {
    if (!byRank.count(r)) rep.missingRanks.push_back(r);
  }

  // 1. The first sequence number at which ranks recorded different collectives.
  std::map<uint64_t, std::vector<std::pair<int, const Entry*>>> bySeq;
  for (const auto& [rank, d] : byRank) {
    for (const Entry& e : d->entries) bySeq[e.seq].push_back({rank, &e});
  }
  for (const auto& [seq, v] : bySeq) {
    if (v.size() < 2) continue;
    bool p2p = false;
    std::map<std::string, std::vector<int>> variants;
    for (const auto& [rank, e] : v) {
      p2p = p2p || e->p2p();
      variants[e->signature()].push_back(rank);
    }
    if (p2p || variants.size() < 2) continue;
    rep.divergence = true;
    std::ostringstream os;
    os << "first divergence at #" << seq << ": ";
    bool first = true;
    for (const auto& [sig, ranks] : variants) {
      const Entry* e = nullptr;
      for (const auto& [rank, x] : v) {
        if (rank == ranks[0]) e = x;
      }
      os << (first ? "" : "; ") << ranksText(ranks) << " called " << e->describe();
      first = false;
    }
    rep.verdict = os.str();
    break;
  }

  // 2. Positions: the oldest op each rank has not completed successfully (pending, or failed: a
  // dump written after the failure), else its last op.
  struct Pos {
    const Entry* at = nullptr;
    const Entry* lastDone = nullptr;
    bool waiting = false;
  };
  std::map<int, Pos> pos;
  for (const auto& [rank, d] : byRank) {
    Pos p;
    for (const Entry& e : d->entries) {
      if (e.state == "completed") p.lastDone = &e;
      if (e.state != "completed" && p.at == nullptr) {
        p.at = &e;
        p.waiting = true;
      }
    }
    if (p.at == nullptr && !d->entries.empty()) p.at = &d->entries.back();
    pos[rank] = p;
  }

  std::ostringstream t;
  t << std::left << std::setw(6) << "rank" << std::setw(10) << "state" << std::setw(50)
    << "position (oldest op not completed, else last op)"
    << "  last completed\n";
  for (int r = 0; r < rep.size; ++r) {
    if (!byRank.count(r)) {
      // One row for a run of ranks without a dump.
      int last = r;
      while (last + 1 < rep.size && !byRank.count(last + 1)) ++last;
      t << std::left << std::setw(6) << (last == r ? std::to_string(r) : str(r, "-", last))
        << "(no dump: stopped, killed, or it never failed or dumped)\n";
      r = last;
      continue;
    }
    t << std::left << std::setw(6) << r;
    const Pos& p = pos[r];
    if (p.at == nullptr) {
      t << std::setw(10) << "empty"
        << "(no ops recorded)\n";
      continue;
    }
    t << std::setw(10) << (p.at->pending() ? "waiting" : p.at->state) << std::setw(50)
      << p.at->describe() << "  " << (p.lastDone ? "#" + std::to_string(p.lastDone->seq) : "-");
    if (!p.at->error.empty()) t << "  error: " << p.at->error.substr(0, 160);
    t << "\n";
  }
  rep.table = t.str();
  if (rep.divergence) return rep;

  // 3. Who waits where, who never came.
  uint64_t front = 0;
  bool anyWaiting = false;
  for (const auto& [rank, p] : pos) {
    if (p.waiting) {
      front = anyWaiting ? std::max(front, p.at->seq) : p.at->seq;
      anyWaiting = true;
    }
  }
  std::vector<std::string> parts;
  if (!anyWaiting) {
    parts.push_back("no rank has an op in flight: every recorded op completed");
  } else {
    std::vector<int> atFront, never;
    std::map<uint64_t, std::vector<int>> behind;
    const Entry* frontEntry = nullptr;
    for (const auto& [rank, p] : pos) {
      if (p.at == nullptr) {
        never.push_back(rank);
      } else if (p.waiting && p.at->seq == front) {
        atFront.push_back(rank);
        frontEntry = p.at;
      } else if (p.waiting) {
        behind[p.at->seq].push_back(rank);
      } else if (p.at->seq < front) {
        never.push_back(rank);
      }
    }
    const std::string frontName = str(frontEntry->op, " #", front);
    for (const auto& [seq, ranks] : behind) {
      const Entry* e = pos[ranks[0]].at;
      parts.push_back(str(ranksText(ranks), ranks.size() == 1 ? " is" : " are", " still at ", e->op,
                          " #", seq, " (", e->state, ")"));
    }
    bool allFailed = true;
    for (int r : atFront) allFailed = allFailed && pos[r].at->state == "failed";
    parts.push_back(str(ranksText(atFront),
                        allFailed             ? " failed in "
                        : atFront.size() == 1 ? " waits in "
                                              : " wait in ",
                        frontEntry->describe()));
    for (int r : never) {
      const Pos& p = pos[r];
      parts.push_back(str("rank ", r, " never arrived at ", frontName, " (its last op: ",
                          p.at ? p.at->describe() + ", " + p.at->state : std::string("none"), ")"));
    }
    if (!rep.missingRanks.empty()) {
      parts.push_back(str(ranksText(rep.missingRanks),
                          " left no dump (stopped or killed?): not known to have reached ",
                          frontName));
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) rep.verdict += (i ? "; " : "") + parts[i];
  return rep;
}

}  // namespace

std::vector<Report> analyze(const std::vector<Dump>& dumps) {
  std::map<std::string, std::vector<const Dump*>> groups;
  for (const Dump& d : dumps) groups[d.group].push_back(&d);
  std::vector<Report> out;
  for (const auto& [name, ds] : groups) out.push_back(analyzeGroup(ds));
  return out;
}

}  // namespace trace
C10D_NAMESPACE_END
}  // namespace c10d
