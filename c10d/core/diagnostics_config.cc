#include "c10d/core/diagnostics_config.h"

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

using Row = Setting<DiagnosticsConfig>;

// Keys are the environment variables' names.
Row row(const char* name, const char* help,
        std::function<void(DiagnosticsConfig&, const std::string&, const std::string&)> parse,
        std::function<std::string(const DiagnosticsConfig&)> show) {
  return Row{name, name, help, std::move(parse), std::move(show)};
}

const SettingsTable<DiagnosticsConfig>& table() {
  static const SettingsTable<DiagnosticsConfig> t(
      "diagnostics",
      {
          row(
              "C10D_RENDEZVOUS_PROGRESS_MS",
              "rendezvous waits print who is missing after this long, then at doubling intervals "
              "(0 = silent)",
              [](DiagnosticsConfig& c, const std::string& v, const std::string& src) {
                c.rendezvousProgressMs = static_cast<int>(parseIntegerSetting(v, src, 0, 86400000));
              },
              [](const DiagnosticsConfig& c) { return std::to_string(c.rendezvousProgressMs); }),
          row(
              "C10D_FLIGHT_RECORDER_SIZE",
              "collectives each group keeps in its flight recorder ring (0 = recorder, stats and "
              "desync positions off)",
              [](DiagnosticsConfig& c, const std::string& v, const std::string& src) {
                c.flightRecorderSize = static_cast<size_t>(parseIntegerSetting(v, src, 0, 1 << 24));
              },
              [](const DiagnosticsConfig& c) { return std::to_string(c.flightRecorderSize); }),
          row(
              "C10D_FLIGHT_RECORDER_DIR",
              "directory for the JSON dump of each rank's ring on a timeout or communication "
              "error (empty: a summary on stderr)",
              [](DiagnosticsConfig& c, const std::string& v, const std::string&) {
                c.flightRecorderDir = v;
              },
              [](const DiagnosticsConfig& c) { return c.flightRecorderDir; }),
          row(
              "C10D_DESYNC_WAIT_MS",
              "on a timeout, how long a rank waits for the others' positions before reporting "
              "who is behind (0 = no report)",
              [](DiagnosticsConfig& c, const std::string& v, const std::string& src) {
                c.desyncWaitMs = static_cast<int>(parseIntegerSetting(v, src, 0, 600000));
              },
              [](const DiagnosticsConfig& c) { return std::to_string(c.desyncWaitMs); }),
          row(
              "C10D_STRAGGLER_REPORT",
              "0 | 1: at shutdown, rank 0 prints which rank arrived last most often",
              [](DiagnosticsConfig& c, const std::string& v, const std::string& src) {
                c.stragglerReport = parseChoiceSetting(v, src, {"0", "1"}) == "1";
              },
              [](const DiagnosticsConfig& c) {
                return std::string(c.stragglerReport ? "1" : "0");
              }),
          row(
              "C10D_FT_DETECT_MS",
              "how long agree()/shrink() wait for a silent (not known dead) rank before declaring "
              "it failed",
              [](DiagnosticsConfig& c, const std::string& v, const std::string& src) {
                c.ftDetectMs = static_cast<int>(parseIntegerSetting(v, src, 0, 86400000));
              },
              [](const DiagnosticsConfig& c) { return std::to_string(c.ftDetectMs); }),
      });
  return t;
}

}  // namespace

DiagnosticsConfig DiagnosticsConfig::load(const std::map<std::string, std::string>& overrides) {
  return table().load(overrides);
}

bool isDiagnosticsSetting(const std::string& key) {
  return table().find(key) != nullptr;
}

void printDiagnosticsConfig(std::ostream& os, const DiagnosticsConfig& cfg) {
  table().print(os, cfg);
}

C10D_NAMESPACE_END
}  // namespace c10d
