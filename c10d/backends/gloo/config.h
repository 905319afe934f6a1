// The gloo backend's settings, declared once in a table (name, environment variable, default,
// description) and parsed in one place. A setting's value comes from ProcessGroup::Options::config
// [name] if present, else from its environment variable, else its default.
//
//   name              env                     default  description
//   ifname            C10D_SOCKET_IFNAME      ""       network interface to bind (e.g. eth0)
//   hostname          C10D_GLOO_HOSTNAME      ""       address or host name to bind
//   max_p2p_threads   C10D_GLOO_P2P_THREADS   64       most threads waiting on send/recv at once
//   debug             C10D_DEBUG              OFF      accepted for symmetry with the other
//                                                      backends: gloo compares every collective's
//                                                      full description before it runs, always
//
// With neither ifname nor hostname set, the device binds to the local address that routes to
// MASTER_ADDR (127.0.0.1 for a local master); without MASTER_ADDR, to the address this host's
// name resolves to, or 127.0.0.1 when it does not resolve (common in containers).
#pragma once

#include <map>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct GlooConfig {
  std::string ifname;
  std::string hostname;
  int maxP2pThreads = 64;
  // C10D_DEBUG=DETAIL. Changes nothing on gloo (the pre-op check is always the full one); kept
  // so that the setting parses and prints as on the other backends.
  bool detail = false;
};

// The table above (c10d/base/settings.h).
const SettingsTable<GlooConfig>& glooSettings();

// Parses the table from `config` (ProcessGroup::Options::config) and the environment. Throws
// InvalidArgument naming the setting for an unknown key or a malformed value.
GlooConfig parseGlooConfig(const std::map<std::string, std::string>& config);

// The table with each setting's current value, one per line, for the perf binaries' --print-config.
std::string describeGlooConfig(const GlooConfig& config);

// The local address to bind to when neither ifname nor hostname is set (see header comment).
std::string defaultGlooBindAddress();

C10D_NAMESPACE_END
}  // namespace c10d
