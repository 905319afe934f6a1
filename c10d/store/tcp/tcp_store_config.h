// TCPStore settings resolved once: options first, then the environment, then the defaults
// (internal to store/; the public knobs are TCPStoreServerOptions and TCPStoreOptions).
//
// Every setting is declared once, in the settings table (c10d/base/settings.h) of
// tcp_store_config.cc (name, environment variable, bounds, description; the defaults are
// ServerConfig's); describeServerConfig() prints it. Values from the environment are validated
// there: a malformed or out-of-range one is an InvalidArgument naming the variable, never a silent
// default. Nothing here blocks or starts threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/store/tcp/tcp_store_server.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {

constexpr const char* kSecretEnv = "C10D_STORE_SECRET";
constexpr const char* kBindEnv = "C10D_STORE_BIND";
// Secrets longer than this are refused (HMAC keys longer than a block are hashed anyway).
constexpr size_t kMaxSecretBytes = 4096;

// Initialized to the defaults.
struct ServerConfig {
  std::string secret;  // "" = no authentication
  int64_t maxConnections = 65536;
  int64_t maxKeys = int64_t{1} << 20;
  int64_t maxValueBytes = int64_t{64} << 20;
  int64_t maxClientBytes = int64_t{4} << 30;
  int64_t maxTotalBytes = int64_t{16} << 30;
  Milliseconds handshakeTimeout{30000};
};

// `secret` if set, else C10D_STORE_SECRET (unset or empty: none). Throws InvalidArgument (without
// the secret's text) when it is longer than kMaxSecretBytes.
std::string resolveSecret(const std::optional<std::string>& secret);

// The options' settings, with unset ones from the environment or the defaults.
ServerConfig resolveServerConfig(const TCPStoreServerOptions& options);

// One line per setting: "maxKeys=1048576 (C10D_STORE_MAX_KEYS; default 1048576): ...". The
// secret is shown as set / not set only.
std::string describeServerConfig(const ServerConfig& config);

// Where the TCPStore server of a job should listen, given the address its clients connect to
// (MASTER_ADDR) and whether every rank is on this host (`singleHost`, e.g. LOCAL_WORLD_SIZE ==
// WORLD_SIZE). In order:
//   C10D_STORE_BIND when set: that address ("*" = every interface);
//   masterAddr when it is a loopback address ("localhost", 127.0.0.0/8, ::1): nothing outside
//     this host needs the store;
//   masterAddr when it is an address of this host (a numeric one, or a name resolving to one;
//     for a name resolving to loopback only when `singleHost`): that interface only;
//   otherwise every interface (""): a NAT or service address this host cannot bind, or a name
//     /etc/hosts maps to loopback here while other hosts resolve it to this host's real address.
struct BindChoice {
  std::string address;  // for TCPStoreOptions::bindAddress ("" = every interface)
  std::string reason;   // why, for messages
};
BindChoice chooseBindAddress(const std::string& masterAddr, bool singleHost);

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
