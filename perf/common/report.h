// The nccl-tests text format (same widths, precisions and words as nccl-tests 2.19's
// src/util.cu) and the -J JSON file. Formatting functions are pure; JsonReport only collects
// and writes (rank 0 uses it). No threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "perf/common/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// nccl-tests' getFloatStr: "%*.2f", falling back to fewer decimals / exponent to fit `width`.
std::string floatStr(double value, int width);

// "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20
// agg iters: 1 validation: 1 graph: 0 unalign: 0"
std::string optionLine(const PerfOptions& o);
// "# Blocking Enabled: ..." for -z 1 / 2, else "".
std::string blockingLine(int blocking);
// "#  Rank  0 Group  0 Pid  12345 on   hostname device  0 [cpu] gloo"; `backend` is the group's
// ProcessGroup::describe() ("gloo", "verbs/shm", "verbs/tcp": what each rank ran on)
std::string rankLine(int rank, int group, int pid, const std::string& host, int device,
                     const std::string& deviceDesc, const std::string& backend);
// The "#" line and the three header lines of the table.
std::string tableHeader();
// "        1024           256     float     sum      -1" (no newline)
std::string rowPreamble(size_t bytes, size_t count, const std::string& type, const std::string& op,
                        int root);
// "    12.34    0.08    0.12       0" or "... N/A" without a check (no newline).
std::string rowBody(double timeUs, double algBw, double busBw, bool reportErrors, int64_t wrong);
// "# Out of bounds values : 0 OK" ... "# Collective test concluded: all_reduce_perf" "#".
// minBw < 0: unchecked.
// "# Peak RSS per rank : max 210.5 MiB (rank 2), min 190.1 MiB" from each rank's ru_maxrss (KiB,
// as decimal strings; negative = unknown), printed before the footer.
std::string peakRssLine(const std::vector<std::string>& kibPerRank);
std::string footer(int errors, double avgBusBw, double minBw, const std::string& program);

// One row of the table as parsed back (the format's inverse, for tests and tools).
struct ParsedRow {
  size_t size = 0;
  size_t count = 0;
  std::string type, redop;
  int root = 0;
  double time[2] = {0, 0}, algBw[2] = {0, 0}, busBw[2] = {0, 0};
  int64_t wrong[2] = {-1, -1};  // -1 = "N/A"
};
// Parses a table line (a non-comment line of the output); false if it is not one.
bool parseRow(const std::string& line, ParsedRow* row);

// The -J file: one object with the run's parameters ("config", "devices", ...) and the rows
// ("results"), keyed as nccl-tests' JSON output, plus c10d's "backend", "device", "world_size".
class JsonReport {
 public:
  JsonReport(int argc, char** argv, const std::string& program, const PerfOptions& o);
  void setWorld(const std::string& backend, const std::string& device, int worldSize);
  void addDevice(int rank, int pid, const std::string& host, int device,
                 const std::string& deviceDesc);
  void beginRow(size_t bytes, size_t count, const std::string& type, const std::string& op,
                int root);
  void rowResult(bool inPlace, double timeUs, double algBw, double busBw, bool reportErrors,
                 int64_t wrong);
  void endRow(int iters);
  void finish(int errors, double avgBusBw, double minBw);
  // Writes the document to `path` (overwriting); throws Error naming the path on failure.
  void write(const std::string& path) const;
  const nlohmann::json& doc() const { return doc_; }

 private:
  nlohmann::json doc_;
  nlohmann::json row_;
};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
