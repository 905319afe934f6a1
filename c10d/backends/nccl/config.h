// The nccl backend's settings, declared once in a table (c10d/base/settings.h: key, environment
// variable, range, description) and parsed in one place. A setting's value comes from
// ProcessGroup::Options::config[key] if present, else from its environment variable, else its
// default. CUDA-free (unit-tested on machines without a GPU).
//
//   key                   env                             default  description
//   eager_init            C10D_NCCL_EAGER_INIT            0        create the communicator in the
//                                                                  constructor (else on first op)
//   device_id             C10D_NCCL_DEVICE_ID             -1       device for eager init and for a
//                                                                  barrier before any op; -1: the
//                                                                  thread's current CUDA device
//   high_priority_stream  C10D_NCCL_HIGH_PRIORITY_STREAM  0        ops run on a high-priority
//                                                                  stream
//   blocking_wait         C10D_NCCL_BLOCKING_WAIT         1        1: Work::wait() blocks the host
//                                                                  until the op is done; 0: it
//                                                                  only makes the current stream
//                                                                  wait
//   watchdog_poll_us      C10D_NCCL_WATCHDOG_POLL_US      1000     longest sleep of the watchdog
//                                                                  between polls
//   shutdown_grace_ms     C10D_NCCL_SHUTDOWN_GRACE_MS     2000     how long shutdown() lets ops in
//                                                                  flight finish before aborting
//   split                 C10D_NCCL_SPLIT                 1        sub-groups spanning the whole
//                                                                  parent use ncclCommSplit
//   debug                 C10D_DEBUG                      OFF      DETAIL: compare every
//                                                                  collective's description
#pragma once

#include <map>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

struct Config {
  bool eagerInit = false;
  int deviceId = -1;
  bool highPriorityStream = false;
  bool blockingWait = true;
  int watchdogPollUs = 1000;
  int shutdownGraceMs = 2000;
  bool split = true;
  // C10D_DEBUG=DETAIL: every collective's description is compared across ranks before it runs.
  bool detail = false;
};

// The table above (c10d/base/settings.h).
const SettingsTable<Config>& settings();

// Parses the table from `config` (ProcessGroup::Options::config) and the environment. Throws
// InvalidArgument naming the setting, where its value came from and the allowed range for an
// unknown key or a malformed value.
Config parseConfig(const std::map<std::string, std::string>& config);

// The table with each setting's value, one per line ("nccl.eager_init = 0 (env ..., default 0):
// ..."), for the perf binaries' --print-config.
std::string describeConfig(const Config& config);

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
