#include "c10d/backends/nccl/config.h"

#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

// An integer setting of `Config` in [min, max]; `field` points at it (int or bool).
template <typename Field>
Setting<Config> integer(const char* key, const char* env, long min, long max, const char* help,
                        Field Config::*field) {
  return Setting<Config>{
      key, env, help,
      [=](Config& c, const std::string& v, const std::string& src) {
        c.*field = static_cast<Field>(parseIntegerSetting(v, src, min, max, help));
      },
      [=](const Config& c) { return std::to_string(static_cast<long>(c.*field)); }};
}

}  // namespace

const SettingsTable<Config>& settings() {
  static const SettingsTable<Config> t(
      "nccl",
      {
          integer("eager_init", "C10D_NCCL_EAGER_INIT", 0, 1,
                  "create the communicator in the constructor (else on first use)",
                  &Config::eagerInit),
          integer("device_id", "C10D_NCCL_DEVICE_ID", -1, 4095,
                  "device for eager init and ops before any tensor names one; -1: the current "
                  "CUDA device",
                  &Config::deviceId),
          integer("high_priority_stream", "C10D_NCCL_HIGH_PRIORITY_STREAM", 0, 1,
                  "run ops on a high-priority CUDA stream", &Config::highPriorityStream),
          integer("blocking_wait", "C10D_NCCL_BLOCKING_WAIT", 0, 1,
                  "1: Work::wait() blocks the host until the op is done; 0: it only makes the "
                  "current stream wait",
                  &Config::blockingWait),
          integer("watchdog_poll_us", "C10D_NCCL_WATCHDOG_POLL_US", 10, 1000000,
                  "longest sleep of the watchdog between polls of events and NCCL errors",
                  &Config::watchdogPollUs),
          integer("shutdown_grace_ms", "C10D_NCCL_SHUTDOWN_GRACE_MS", 0, 3600000,
                  "how long shutdown() lets ops in flight finish before aborting the communicator",
                  &Config::shutdownGraceMs),
          integer("split", "C10D_NCCL_SPLIT", 0, 1,
                  "sub-groups spanning the whole parent are made with ncclCommSplit",
                  &Config::split),
          Setting<Config>{
              "debug", "C10D_DEBUG",
              "OFF | INFO | DETAIL: DETAIL allgathers every collective's description (op, dtype, "
              "count, root, reduce op; 32 bytes per rank) on the op stream and compares it before "
              "the op runs, blocking the caller until then",
              [](Config& c, const std::string& v, const std::string& src) {
                c.detail = parseChoiceSetting(v, src, {"OFF", "INFO", "DETAIL"}, true) == "DETAIL";
              },
              [](const Config& c) { return std::string(c.detail ? "DETAIL" : "OFF"); }},
      });
  return t;
}

Config parseConfig(const std::map<std::string, std::string>& config) {
  return settings().load(config, SettingsTable<Config>::UnknownKeys::kReject);
}

std::string describeConfig(const Config& c) {
  std::ostringstream ss;
  settings().print(ss, c, "nccl.");
  return ss.str();
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
