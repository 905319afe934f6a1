#include "backends/gloo/config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <sstream>

#include "c10d/diagnostics_config.h"
#include "c10d/error.h"
#include "c10d/settings.h"

namespace c10d {

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
              "OFF | INFO | DETAIL: DETAIL compares every collective's full description (op, "
              "dtype, count, root, reduce op) across ranks before running it; otherwise only its "
              "size in bytes",
              [](GlooConfig& c, const std::string& v, const std::string& src) {
                c.detail = parseChoiceSetting(v, src, {"OFF", "INFO", "DETAIL"}, true) == "DETAIL";
              },
              [](const GlooConfig& c) { return std::string(c.detail ? "DETAIL" : "OFF"); }},
      });
  return t;
}

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};

// The local address the kernel would use to reach `host` (a UDP connect sends nothing).
std::string routeTo(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* raw = nullptr;
  if (getaddrinfo(host.c_str(), "29500", &hints, &raw) != 0 || raw == nullptr) return "";
  std::unique_ptr<addrinfo, AddrInfoDeleter> res(raw);
  for (addrinfo* ai = res.get(); ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    bool ok = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
              ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    ::close(fd);
    if (!ok) continue;
    char buf[INET6_ADDRSTRLEN] = {0};
    const void* src =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(local.ss_family, src, buf, sizeof(buf)) != nullptr) return buf;
  }
  return "";
}

}  // namespace

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
    std::string addr = routeTo(master);
    if (!addr.empty()) return addr;
  }
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) {
    std::string addr = routeTo(host);
    if (!addr.empty()) return addr;
  }
  return "127.0.0.1";
}

}  // namespace c10d
