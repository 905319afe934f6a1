#include "backends/nccl/config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "c10d/error.h"

namespace c10d {
namespace nccl {

const ConfigEntry kConfigTable[] = {
    {"eager_init", "C10D_NCCL_EAGER_INIT", "0", 0, 1,
     "create the communicator in the constructor (else on first use)"},
    {"device_id", "C10D_NCCL_DEVICE_ID", "-1", -1, 4095,
     "device for eager init and ops before any tensor names one; -1: the current CUDA device"},
    {"high_priority_stream", "C10D_NCCL_HIGH_PRIORITY_STREAM", "0", 0, 1,
     "run ops on a high-priority CUDA stream"},
    {"blocking_wait", "C10D_NCCL_BLOCKING_WAIT", "1", 0, 1,
     "1: Work::wait() blocks the host until the op is done; 0: it only makes the current stream "
     "wait"},
    {"watchdog_poll_us", "C10D_NCCL_WATCHDOG_POLL_US", "1000", 10, 1000000,
     "longest sleep of the watchdog between polls of events and NCCL errors"},
    {"shutdown_grace_ms", "C10D_NCCL_SHUTDOWN_GRACE_MS", "2000", 0, 3600000,
     "how long shutdown() lets ops in flight finish before aborting the communicator"},
    {"split", "C10D_NCCL_SPLIT", "1", 0, 1,
     "sub-groups spanning the whole parent are made with ncclCommSplit"},
    {"debug", "C10D_DEBUG", "OFF", 0, 0,
     "OFF | INFO | DETAIL: DETAIL allgathers every collective's description (op, dtype, count, "
     "root, reduce op; 32 bytes per rank) on the op stream and compares it before the op runs, "
     "blocking the caller until then"},
    {nullptr, nullptr, nullptr, 0, 0, nullptr},
};

namespace {

const ConfigEntry* findEntry(const std::string& name) {
  for (const ConfigEntry* e = kConfigTable; e->name != nullptr; ++e) {
    if (name == e->name) return e;
  }
  return nullptr;
}

// The setting's text and where it came from (options.config, the environment, the default).
std::string lookupText(const std::map<std::string, std::string>& config, const ConfigEntry& e,
                       std::string* source) {
  auto it = config.find(e.name);
  if (it != config.end()) {
    *source = detail::str("options.config[\"", e.name, "\"]");
    return it->second;
  }
  if (const char* v = std::getenv(e.env); v != nullptr && *v != '\0') {
    *source = e.env;
    return v;
  }
  *source = "default";
  return e.defaultValue;
}

bool lookupDetail(const std::map<std::string, std::string>& config) {
  std::string source;
  const std::string given = lookupText(config, *findEntry("debug"), &source);
  std::string v = given;
  for (auto& ch : v) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  C10D_CHECK_ARG(v == "OFF" || v == "INFO" || v == "DETAIL" || v.empty(), "nccl: ", source, "=\"",
                 given, "\": expected OFF, INFO or DETAIL");
  return v == "DETAIL";
}

long lookup(const std::map<std::string, std::string>& config, const char* name) {
  const ConfigEntry& e = *findEntry(name);
  std::string source;
  const std::string value = lookupText(config, e, &source);
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value.c_str(), &end, 10);
  C10D_CHECK_ARG(
      !value.empty() && end != nullptr && *end == '\0' && errno == 0 && v >= e.min && v <= e.max,
      "nccl: ", source, "=\"", value, "\" is not an integer in [", e.min, ", ", e.max,
      "] (setting ", e.name, ": ", e.description, ")");
  return v;
}

}  // namespace

Config parseConfig(const std::map<std::string, std::string>& config) {
  for (const auto& kv : config) {
    if (findEntry(kv.first) != nullptr) continue;
    std::ostringstream known;
    for (const ConfigEntry* e = kConfigTable; e->name != nullptr; ++e) {
      known << (e == kConfigTable ? "" : ", ") << e->name;
    }
    C10D_THROW(InvalidArgument, "nccl: unknown config key \"", kv.first, "\" (known: ", known.str(),
               ")");
  }
  Config c;
  c.eagerInit = lookup(config, "eager_init") != 0;
  c.deviceId = static_cast<int>(lookup(config, "device_id"));
  c.highPriorityStream = lookup(config, "high_priority_stream") != 0;
  c.blockingWait = lookup(config, "blocking_wait") != 0;
  c.watchdogPollUs = static_cast<int>(lookup(config, "watchdog_poll_us"));
  c.shutdownGraceMs = static_cast<int>(lookup(config, "shutdown_grace_ms"));
  c.split = lookup(config, "split") != 0;
  c.detail = lookupDetail(config);
  return c;
}

std::string describeConfig(const Config& c) {
  std::ostringstream ss;
  for (const ConfigEntry* e = kConfigTable; e->name != nullptr; ++e) {
    long v = 0;
    if (std::strcmp(e->name, "eager_init") == 0) v = c.eagerInit;
    if (std::strcmp(e->name, "device_id") == 0) v = c.deviceId;
    if (std::strcmp(e->name, "high_priority_stream") == 0) v = c.highPriorityStream;
    if (std::strcmp(e->name, "blocking_wait") == 0) v = c.blockingWait;
    if (std::strcmp(e->name, "watchdog_poll_us") == 0) v = c.watchdogPollUs;
    if (std::strcmp(e->name, "shutdown_grace_ms") == 0) v = c.shutdownGraceMs;
    if (std::strcmp(e->name, "split") == 0) v = c.split;
    if (std::strcmp(e->name, "debug") == 0) {
      ss << "nccl.debug = " << (c.detail ? "DETAIL" : "OFF") << "  (env " << e->env << ", default "
         << e->defaultValue << "): " << e->description << "\n";
      continue;
    }
    ss << "nccl." << e->name << " = " << v << "  (env " << e->env << ", default " << e->defaultValue
       << "): " << e->description << "\n";
  }
  return ss.str();
}

}  // namespace nccl
}  // namespace c10d
