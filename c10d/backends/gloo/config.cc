#include "c10d/backends/gloo/config.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"
#include "c10d/base/socket.h"
#include "c10d/core/diagnostics_config.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

const SettingsTable<GlooConfig>& glooSettings() {
  using Row = Setting<GlooConfig>;
  static const SettingsTable<GlooConfig> t(
      "gloo",
      {
          Row{"ifname", "C10D_SOCKET_IFNAME", "network interface to bind (e.g. eth0)",
              [](GlooConfig& c, const std::string& v, const std::string&) { c.ifname = v; },
              [](const GlooConfig& c) { return c.ifname; }},
          Row{"hostname", "C10D_GLOO_HOSTNAME", "address or host name to bind",
              [](GlooConfig& c, const std::string& v, const std::string&) { c.hostname = v; },
              [](const GlooConfig& c) { return c.hostname; }},
          Row{"max_p2p_threads", "C10D_GLOO_P2P_THREADS",
              "most threads waiting on send/recv completions at once",
              [](GlooConfig& c, const std::string& v, const std::string& src) {
                c.maxP2pThreads = static_cast<int>(parseIntegerSetting(
                    v, src, 1, 4096, "most threads waiting on send/recv completions at once"));
              },
              [](const GlooConfig& c) { return std::to_string(c.maxP2pThreads); }},
          Row{"debug", "C10D_DEBUG",
              "OFF | INFO | DETAIL: accepted; gloo compares every collective's full description "
              "(op, dtype, count, root, reduce op) across ranks before running it, always",
              [](GlooConfig& c, const std::string& v, const std::string& src) {
                c.detail = parseChoiceSetting(v, src, {"OFF", "INFO", "DETAIL"}, true) == "DETAIL";
              },
              [](const GlooConfig& c) { return std::string(c.detail ? "DETAIL" : "OFF"); }},
      });
  return t;
}

namespace {}  // namespace

GlooConfig parseGlooConfig(const std::map<std::string, std::string>& config) {
  return glooSettings().load(config, SettingsTable<GlooConfig>::UnknownKeys::kReject,
                             isDiagnosticsSetting);
}

std::string describeGlooConfig(const GlooConfig& config) {
  std::ostringstream ss;
  glooSettings().print(ss, config, "gloo.");
  return ss.str();
}

std::string defaultGlooBindAddress() {
  const char* master = std::getenv("MASTER_ADDR");
  if (master != nullptr && *master != '\0') {
    std::string addr = net::routeTo(master);
    if (!addr.empty()) return addr;
  }
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) {
    std::string addr = net::routeTo(host);
    if (!addr.empty()) return addr;
  }
  return "127.0.0.1";
}

C10D_NAMESPACE_END
}  // namespace c10d
