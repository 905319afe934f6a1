#include "backends/gloo/config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "c10d/diagnostics_config.h"
#include "c10d/error.h"

namespace c10d {

const GlooConfigEntry kGlooConfigTable[] = {
    {"ifname", "C10D_SOCKET_IFNAME", "", "network interface to bind (e.g. eth0)"},
    {"hostname", "C10D_GLOO_HOSTNAME", "", "address or host name to bind"},
    {"max_p2p_threads", "C10D_GLOO_P2P_THREADS", "64",
     "most threads waiting on send/recv completions at once"},
    {"debug", "C10D_DEBUG", "OFF",
     "OFF | INFO | DETAIL: DETAIL compares every collective's full description (op, dtype, count, "
     "root, reduce op) across ranks before running it; otherwise only its size in bytes"},
    {nullptr, nullptr, nullptr, nullptr},
};

namespace {

const GlooConfigEntry* findEntry(const std::string& name) {
  for (const GlooConfigEntry* e = kGlooConfigTable; e->name != nullptr; ++e) {
    if (name == e->name) return e;
  }
  return nullptr;
}

std::string lookup(const std::map<std::string, std::string>& config, const GlooConfigEntry& e,
                   std::string* source) {
  auto it = config.find(e.name);
  if (it != config.end()) {
    *source = std::string("options.config[\"") + e.name + "\"]";
    return it->second;
  }
  const char* v = std::getenv(e.env);
  if (v != nullptr && *v != '\0') {
    *source = e.env;
    return v;
  }
  *source = "default";
  return e.defaultValue;
}

int parsePositive(const std::string& value, const std::string& source) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  C10D_CHECK_ARG(!value.empty() && end != nullptr && *end == '\0' && v > 0 && v <= 4096,
                 "gloo: ", source, "=\"", value, "\" is not an integer in [1, 4096]");
  return static_cast<int>(v);
}

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
  for (const auto& kv : config) {
    if (findEntry(kv.first) == nullptr && !isDiagnosticsSetting(kv.first)) {
      std::ostringstream known;
      for (const GlooConfigEntry* e = kGlooConfigTable; e->name != nullptr; ++e) {
        known << (e == kGlooConfigTable ? "" : ", ") << e->name;
      }
      C10D_THROW(InvalidArgument, "gloo: unknown config key \"", kv.first,
                 "\" (known: ", known.str(), ")");
    }
  }
  GlooConfig out;
  std::string source;
  out.ifname = lookup(config, *findEntry("ifname"), &source);
  out.hostname = lookup(config, *findEntry("hostname"), &source);
  std::string threads = lookup(config, *findEntry("max_p2p_threads"), &source);
  out.maxP2pThreads = parsePositive(threads, source);
  std::string debug = lookup(config, *findEntry("debug"), &source);
  for (auto& ch : debug) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (debug != "OFF" && debug != "INFO" && debug != "DETAIL" && !debug.empty()) {
    C10D_THROW(InvalidArgument, "gloo setting debug (", source, ") = \"", debug,
               "\": expected OFF, INFO or DETAIL");
  }
  out.detail = debug == "DETAIL";
  return out;
}

std::string describeGlooConfig(const GlooConfig& config) {
  std::ostringstream ss;
  for (const GlooConfigEntry* e = kGlooConfigTable; e->name != nullptr; ++e) {
    std::string value;
    if (std::strcmp(e->name, "ifname") == 0) value = config.ifname;
    if (std::strcmp(e->name, "hostname") == 0) value = config.hostname;
    if (std::strcmp(e->name, "max_p2p_threads") == 0) value = std::to_string(config.maxP2pThreads);
    if (std::strcmp(e->name, "debug") == 0) value = config.detail ? "DETAIL" : "OFF";
    ss << "gloo." << e->name << " = \"" << value << "\"  (env " << e->env << ", default \""
       << e->defaultValue << "\"): " << e->description << "\n";
  }
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
