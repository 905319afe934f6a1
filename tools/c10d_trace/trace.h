// c10d_trace: reads the flight recorder dumps of every rank of a job (GroupDiagnostics writes one
// JSON file per rank and group: c10d/core/flight_recorder.h has the format) and says where the
// ranks part ways: the first op where they diverge (a different op, dtype, count, root or reduce op
// at the same sequence number), or the op some ranks wait in that others never reached (or left no
// dump: stopped or dead).
//
// Standalone: no libc10d (a dump can be read where the job's library is not installed). Errors in
// the input (unreadable file, bad JSON, a missing or mistyped field, two dumps of one rank) are a
// TraceError naming the file and the field.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace trace {

class TraceError : public std::runtime_error {
 public:
  explicit TraceError(const std::string& msg) : std::runtime_error(msg) {}
};

struct Entry {
  uint64_t seq = 0;
  uint64_t collSeq = 0;
  std::string op, dtype, reduceOp, state, error;
  uint64_t count = 0, tensors = 0;
  int64_t root = -1, peer = -1;
  std::vector<uint64_t> sendCounts, recvCounts;
  int64_t issueUs = 0, startUs = 0, endUs = 0;

  bool pending() const { return state == "issued" || state == "started"; }
  bool p2p() const { return op == "send" || op == "recv" || op == "recv_any_source"; }
  // "allreduce #17 (float32 x 1024, sum)"
  std::string describe() const;
  // The fields every rank must agree on, as text (empty for p2p ops).
  std::string signature() const;
};

struct Dump {
  std::string path, group, backend, host, reason;
  int rank = -1, size = 0;
  int64_t pid = 0, dumpedUs = 0;
  uint64_t capacity = 0, recorded = 0;
  std::vector<Entry> entries;  // oldest first
};

// Parses one dump; throws TraceError naming `path` and what is wrong.
Dump parseDump(const std::string& text, const std::string& path);
// Reads the files (a directory: every *.json in it); throws TraceError.
std::vector<Dump> loadDumps(const std::vector<std::string>& paths);

// The analysis of one group, printed as a table and a verdict.
struct Report {
  std::string group;
  int size = 0;
  std::vector<int> missingRanks;  // no dump
  std::string table;              // one row per rank (one per run of ranks without a dump)
  std::string verdict;            // the first divergence, or who is stuck and who never came
  bool divergence = false;
};

// Every dump must belong to `dumps[0]`'s group family; groups are analysed separately.
std::vector<Report> analyze(const std::vector<Dump>& dumps);

}  // namespace trace
C10D_NAMESPACE_END
}  // namespace c10d
