#include "perf/common/report.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(static_cast<size_t>(n > 0 ? n : 0), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

std::string now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string floatStr(double value, int width) {
  char buf[64];
  const size_t cap = static_cast<size_t>(width) + 1;
  if (std::snprintf(buf, cap, "%*.2f", width, value) <= width) return buf;
  if (std::snprintf(buf, cap, "%*.1f", width, value) <= width) return buf;
  if (std::snprintf(buf, cap, "%*.0f", width, value) <= width) return buf;
  std::snprintf(buf, cap, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

std::string optionLine(const PerfOptions& o) {
  const bool factor = o.stepFactor > 1;
  return format(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      1, 1, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(factor ? o.stepFactor : o.stepBytes), factor ? "factor" : "bytes",
      o.warmupIters, o.iters, o.aggIters, o.check, 0, 0);
}

std::string blockingLine(int blocking) {
  // nccl-tests' -z 1 also barriers the threads of one process; there is one thread per process
  // here, so both modes wait after each op and neither adds a barrier between processes.
  if (blocking == 1)
    return "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n";
  if (blocking == 2)
    return "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n";
  return "";
}

std::string rankLine(int rank, int group, int pid, const std::string& host, int device,
                     const std::string& deviceDesc, const std::string& backend) {
  return format("#  Rank %2d Group %2d Pid %6d on %10s device %2d %s %s\n", rank, group, pid,
                host.c_str(), device, deviceDesc.c_str(), backend.c_str());
}

std::string tableHeader() {
  std::string s = "#\n";
  s += format(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place   "
      "       \n",
      "", "", "", "", "");
  s += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong", 0, "");
  s += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "", 0, "");
  return s;
}

std::string rowPreamble(size_t bytes, size_t count, const std::string& type, const std::string& op,
                        int root) {
  std::string rootName = format("%6i", root);
  return format("%12li  %12li  %8s  %6s  %6s", static_cast<long>(bytes), static_cast<long>(count),
                type.c_str(), op.c_str(), rootName.c_str());
}

std::string rowBody(double timeUs, double algBw, double busBw, bool reportErrors, int64_t wrong) {
  const std::string t = floatStr(timeUs, 7), a = floatStr(algBw, 6), b = floatStr(busBw, 6);
  if (reportErrors) {
    return format("  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(),
                  static_cast<double>(wrong));
  }
  return format("  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
}

std::string peakRssLine(const std::vector<std::string>& kibPerRank) {
  long maxKib = -1, minKib = -1;
  size_t maxRank = 0;
  for (size_t r = 0; r < kibPerRank.size(); ++r) {
    const long v = std::atol(kibPerRank[r].c_str());
    if (v < 0) continue;
    if (maxKib < 0 || v > maxKib) {
      maxKib = v;
      maxRank = r;
    }
    if (minKib < 0 || v < minKib) minKib = v;
  }
  if (maxKib < 0) return format("# %-20s : unknown\n", "Peak RSS per rank");
  return format("# %-20s : max %.1f MiB (rank %zu), min %.1f MiB\n", "Peak RSS per rank",
                maxKib / 1024.0, maxRank, minKib / 1024.0);
}

std::string footer(int errors, double avgBusBw, double minBw, const std::string& program) {
  std::string s;
  s += format("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  s += format("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw,
              minBw < 0 ? "" : (avgBusBw < minBw * 0.9 ? "FAILED" : "OK"));
  s += "#\n";
  s += format("# Collective test concluded: %s\n", program.c_str());
  s += "#\n";
  return s;
}

bool parseRow(const std::string& line, ParsedRow* row) {
  if (line.empty() || line[0] == '#') return false;
  std::istringstream in(line);
  std::vector<std::string> tok;
  for (std::string t; in >> t;) tok.push_back(t);
  if (tok.size() != 13) return false;
  try {
    size_t pos = 0;
    row->size = std::stoull(tok[0], &pos);
    if (pos != tok[0].size()) return false;
    row->count = std::stoull(tok[1]);
    row->type = tok[2];
    row->redop = tok[3];
    row->root = std::stoi(tok[4]);
    for (int k = 0; k < 2; ++k) {
      row->time[k] = std::stod(tok[5 + 4 * k]);
      row->algBw[k] = std::stod(tok[6 + 4 * k]);
      row->busBw[k] = std::stod(tok[7 + 4 * k]);
      const std::string& w = tok[8 + 4 * k];
      row->wrong[k] = w == "N/A" ? -1 : static_cast<int64_t>(std::stod(w));
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

JsonReport::JsonReport(int argc, char** argv, const std::string& program, const PerfOptions& o) {
  doc_["version"] = 3;  // nccl-tests' JSON_FILE_VERSION this layout follows
  doc_["start_time"] = now();
  std::vector<std::string> args(argv, argv + argc);
  doc_["args"] = args;
  doc_["program"] = program;
  doc_["c10d_version"] = C10D_VERSION;
  nlohmann::json cfg;
  cfg["nthreads"] = 1;
  cfg["ngpus"] = 1;
  cfg["minimum_bytes"] = o.minBytes;
  cfg["maximum_bytes"] = o.maxBytes;
  if (o.stepFactor > 1) {
    cfg["step_factor"] = o.stepFactor;
  } else {
    cfg["step_bytes"] = o.stepBytes;
  }
  cfg["warmup_iters"] = o.warmupIters;
  cfg["iterations"] = o.iters;
  cfg["aggregated_iterations"] = o.aggIters;
  cfg["validation"] = o.check;
  cfg["graph"] = 0;
  cfg["blocking_collectives"] = o.blocking != 0;
  cfg["average"] = static_cast<int>(o.average);
  cfg["root"] = o.root;
  cfg["timeout_s"] = o.timeoutSec;
  doc_["config"] = cfg;
  doc_["devices"] = nlohmann::json::array();
  doc_["results"] = nlohmann::json::array();
}

void JsonReport::setWorld(const std::string& backend, const std::string& device, int worldSize) {
  doc_["backend"] = backend;
  doc_["device"] = device;
  doc_["world_size"] = worldSize;
}

void JsonReport::addDevice(int rank, int pid, const std::string& host, int device,
                           const std::string& deviceDesc) {
  doc_["devices"].push_back({{"rank", rank},
                             {"group", 0},
                             {"pid", pid},
                             {"hostname", host},
                             {"device", device},
                             {"device_info", deviceDesc}});
}

void JsonReport::beginRow(size_t bytes, size_t count, const std::string& type,
                          const std::string& op, int root) {
  row_ = {{"size", bytes}, {"count", count}, {"type", type}, {"redop", op}, {"root", root}};
}

void JsonReport::rowResult(bool inPlace, double timeUs, double algBw, double busBw,
                           bool reportErrors, int64_t wrong) {
  nlohmann::json r{{"time", timeUs}, {"alg_bw", algBw}, {"bus_bw", busBw}};
  r["nwrong"] = reportErrors ? nlohmann::json(wrong) : nlohmann::json(nullptr);
  row_[inPlace ? "in_place" : "out_of_place"] = r;
}

void JsonReport::endRow(int iters) {
  row_["actual_iterations"] = iters;
  row_["experiment_name"] = "";
  doc_["results"].push_back(row_);
}

void JsonReport::finish(int errors, double avgBusBw, double minBw) {
  doc_["out_of_bounds"] = {{"count", errors}, {"okay", errors == 0}};
  nlohmann::json bw{{"bandwidth", avgBusBw}};
  bw["okay"] = minBw < 0 ? nlohmann::json("unchecked") : nlohmann::json(avgBusBw >= minBw * 0.9);
  doc_["average_bus_bandwidth"] = bw;
  doc_["end_time"] = now();
}

void JsonReport::write(const std::string& path) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f)
    C10D_THROW(Error, "cannot open JSON output file '", path, "': ", detail::errnoString(errno));
  f << doc_.dump(2) << "\n";
  if (!f.good()) C10D_THROW(Error, "cannot write JSON output file '", path, "'");
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
