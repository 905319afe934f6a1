#include "c10d/diagnostics_config.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <vector>

#include "c10d/error.h"

namespace c10d {

namespace {

struct Setting {
  const char* name;
  const char* description;
  std::function<void(DiagnosticsConfig&, const std::string&)> parse;
  std::function<std::string(const DiagnosticsConfig&)> show;
};

long long parseNonNegative(const char* name, const std::string& v, long long max) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end == v.c_str() || *end != '\0' || errno != 0 || x < 0 || x > max) {
    C10D_THROW(InvalidArgument, name, "='", v, "' is not an integer in [0, ", max, "]");
  }
  return x;
}

const std::vector<Setting>& table() {
  static const std::vector<Setting> t = {
      {"C10D_RENDEZVOUS_PROGRESS_MS",
       "rendezvous waits print who is missing after this long, then at doubling intervals "
       "(0 = silent)",
       [](DiagnosticsConfig& c, const std::string& v) {
         c.rendezvousProgressMs =
             static_cast<int>(parseNonNegative("C10D_RENDEZVOUS_PROGRESS_MS", v, 86400000));
       },
       [](const DiagnosticsConfig& c) { return std::to_string(c.rendezvousProgressMs); }},
      {"C10D_FLIGHT_RECORDER_SIZE",
       "collectives each group keeps in its flight recorder ring (0 = recorder, stats and desync "
       "positions off)",
       [](DiagnosticsConfig& c, const std::string& v) {
         c.flightRecorderSize =
             static_cast<size_t>(parseNonNegative("C10D_FLIGHT_RECORDER_SIZE", v, 1 << 24));
       },
       [](const DiagnosticsConfig& c) { return std::to_string(c.flightRecorderSize); }},
      {"C10D_FLIGHT_RECORDER_DIR",
       "directory for the JSON dump of each rank's ring on a timeout or communication error "
       "(empty: a summary on stderr)",
       [](DiagnosticsConfig& c, const std::string& v) { c.flightRecorderDir = v; },
       [](const DiagnosticsConfig& c) { return c.flightRecorderDir; }},
      {"C10D_DESYNC_WAIT_MS",
       "on a timeout, how long a rank waits for the others' positions before reporting who is "
       "behind (0 = no report)",
       [](DiagnosticsConfig& c, const std::string& v) {
         c.desyncWaitMs = static_cast<int>(parseNonNegative("C10D_DESYNC_WAIT_MS", v, 600000));
       },
       [](const DiagnosticsConfig& c) { return std::to_string(c.desyncWaitMs); }},
      {"C10D_STRAGGLER_REPORT",
       "0 | 1: at shutdown, rank 0 prints which rank arrived last most often",
       [](DiagnosticsConfig& c, const std::string& v) {
         if (v != "0" && v != "1")
           C10D_THROW(InvalidArgument, "C10D_STRAGGLER_REPORT='", v, "': expected 0 or 1");
         c.stragglerReport = v == "1";
       },
       [](const DiagnosticsConfig& c) { return std::string(c.stragglerReport ? "1" : "0"); }},
  };
  return t;
}

}  // namespace

DiagnosticsConfig DiagnosticsConfig::load(const std::map<std::string, std::string>& overrides) {
  DiagnosticsConfig c;
  for (const Setting& s : table()) {
    auto it = overrides.find(s.name);
    if (it != overrides.end()) {
      s.parse(c, it->second);
    } else if (const char* v = std::getenv(s.name)) {
      s.parse(c, v);
    }
  }
  return c;
}

bool isDiagnosticsSetting(const std::string& key) {
  for (const Setting& s : table()) {
    if (key == s.name) return true;
  }
  return false;
}

void printDiagnosticsConfig(std::ostream& os, const DiagnosticsConfig& cfg) {
  const DiagnosticsConfig defaults;
  for (const Setting& s : table()) {
    os << std::left << std::setw(30) << s.name << std::setw(12) << s.show(cfg) << " (default "
       << s.show(defaults) << ")  " << s.description << "\n";
  }
}

}  // namespace c10d
