// DiagnosticsConfig: the settings of the core's diagnostics (rendezvous progress, flight
// recorder, desync report, straggler summary), declared once in a table (name, default,
// description), read from ProcessGroup::Options::config first and the environment second, and
// printable (printDiagnosticsConfig).
//
// Pure data; no threads, nothing blocks. A malformed value is an InvalidArgument naming the
// setting and the value.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct DiagnosticsConfig {
  // C10D_RENDEZVOUS_PROGRESS_MS: first progress line of a rendezvous wait after this long, then
  // at doubling intervals (at most one a minute); 0 = silent.
  int rendezvousProgressMs = 5000;
  // C10D_FLIGHT_RECORDER_SIZE: collectives each group remembers (a ring); 0 = recorder, stats
  // and desync positions off.
  size_t flightRecorderSize = 2000;
  // C10D_FLIGHT_RECORDER_DIR: where a group dumps its ring on a timeout or communication error
  // (one JSON file per rank and group); empty = a short summary on stderr instead.
  std::string flightRecorderDir;
  // C10D_DESYNC_WAIT_MS: on a timeout, how long a rank waits for the others' positions through
  // the store before it reports; 0 = no desync report.
  int desyncWaitMs = 400;
  // C10D_STRAGGLER_REPORT: at shutdown, rank 0 prints which rank arrived last most often (the
  // ranks exchange their recent op times through the store).
  bool stragglerReport = false;
  // C10D_FT_DETECT_MS: how long agree() waits for a rank that is silent but not known dead before
  // declaring it failed (docs/fault-tolerance.md).
  int ftDetectMs = 10000;

  // Reads each setting from `overrides` (keys as the env names) or else the environment.
  static DiagnosticsConfig load(const std::map<std::string, std::string>& overrides = {});
};

// Whether `key` names one of these settings (backends that reject unknown Options::config keys
// let these through).
bool isDiagnosticsSetting(const std::string& key);

// Prints the table: name, value in effect, default, description.
void printDiagnosticsConfig(std::ostream& os, const DiagnosticsConfig& cfg);

C10D_NAMESPACE_END
}  // namespace c10d
