#include "c10d/store/tcp/tcp_store_config.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"
#include "c10d/base/socket.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {
namespace {

constexpr const char* kHandshakeEnv = "C10D_STORE_HANDSHAKE_TIMEOUT_MS";

// A limit's value in [min, max] (with `bytes`, K/M/G suffixes too). `source` is the key when the
// value came from TCPStoreServerOptions (see resolveServerConfig), else the environment variable.
int64_t parseLimit(const std::string& key, const std::string& v, const std::string& source,
                   int64_t min, int64_t max, bool bytes) {
  long long x = 0;
  if (source == key) {  // an option: a number already
    parseInteger(v, INT64_MIN, INT64_MAX, &x);
    C10D_CHECK_ARG(x >= min && x <= max, "TCPStore: limit ", key, " = ", x, " is out of range [",
                   min, ", ", max, "]");
    return x;
  }
  unsigned long long b = 0;
  if (bytes ? !parseByteSize(v, INT64_MAX, &b) : !parseInteger(v, 0, INT64_MAX, &x)) {
    C10D_THROW(InvalidArgument, "environment variable ", source, "='", v, "' is not ",
               bytes ? "a byte count (digits with an optional K, M or G suffix)" : "an integer");
  }
  if (bytes) x = static_cast<long long>(b);
  if (x < min || x > max) {
    C10D_THROW(InvalidArgument, "environment variable ", source, "=", v, " is out of range [", min,
               ", ", max, "]");
  }
  return x;
}

Setting<ServerConfig> limit(const char* key, const char* env, int64_t min, int64_t max, bool bytes,
                            const char* help, int64_t ServerConfig::*field) {
  return Setting<ServerConfig>{
      key, env, help,
      [=](ServerConfig& c, const std::string& v, const std::string& source) {
        c.*field = parseLimit(key, v, source, min, max, bytes);
      },
      [=](const ServerConfig& c) { return std::to_string(c.*field); }};
}

const SettingsTable<ServerConfig>& table() {
  static const SettingsTable<ServerConfig> t(
      "TCPStore",
      {
          limit("maxConnections", "C10D_STORE_MAX_CONNECTIONS", 1, 1 << 24, false,
                "open connections, handshaking ones included; more are refused at their hello",
                &ServerConfig::maxConnections),
          limit("maxKeys", "C10D_STORE_MAX_KEYS", 1, int64_t{1} << 40, false,
                "keys stored; a request creating one more fails", &ServerConfig::maxKeys),
          limit("maxValueBytes", "C10D_STORE_MAX_VALUE_BYTES", 0, kMaxValueBytes, true,
                "bytes of one value (set, append, compareSet, multiSet)",
                &ServerConfig::maxValueBytes),
          limit("maxClientBytes", "C10D_STORE_MAX_CLIENT_BYTES", 0, int64_t{1} << 50, true,
                "key + value bytes stored by one connection (a key is charged to its last writer)",
                &ServerConfig::maxClientBytes),
          limit("maxTotalBytes", "C10D_STORE_MAX_TOTAL_BYTES", 0, int64_t{1} << 50, true,
                "key + value bytes stored in all", &ServerConfig::maxTotalBytes),
          Setting<ServerConfig>{
              "handshakeTimeout", kHandshakeEnv,
              "milliseconds a connection may take to finish its handshake before it is closed",
              [](ServerConfig& c, const std::string& v, const std::string& source) {
                // From the options (checked > 0 there) any length; from the environment <= 2^31.
                c.handshakeTimeout =
                    Milliseconds(source == kHandshakeEnv ? parseLimit("handshakeTimeout", v, source,
                                                                      1, int64_t{1} << 31, false)
                                                         : std::stoll(v));
              },
              [](const ServerConfig& c) { return std::to_string(c.handshakeTimeout.count()); }},
      });
  return t;
}

bool isLoopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (a->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
    if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr) && v6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

// Whether this host has the address (a bind to it, on any port, succeeds).
bool isLocal(const addrinfo* ai) {
  net::Fd fd(socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  sockaddr_storage ss{};
  std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
  if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = 0;
  if (ss.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = 0;
  return bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), ai->ai_addrlen) == 0;
}

}  // namespace

BindChoice chooseBindAddress(const std::string& masterAddr, bool singleHost) {
  if (const char* v = std::getenv(kBindEnv); v != nullptr && *v != '\0') {
    const std::string b = v;
    return {b == "*" ? std::string() : b, detail::str(kBindEnv, "=", b)};
  }
  if (masterAddr == "localhost") return {masterAddr, "MASTER_ADDR is loopback"};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(masterAddr.c_str(), nullptr, &hints, &list) != 0 || list == nullptr) {
    // The clients will fail to resolve it too, with their own clear error.
    return {"", "MASTER_ADDR '" + masterAddr + "' does not resolve here"};
  }
  bool allLoopback = true;
  std::string local;  // the first non-loopback address of this host it resolves to, numeric
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const bool loop = isLoopback(ai->ai_addr);
    allLoopback = allLoopback && loop;
    char host[NI_MAXHOST];
    if (!loop && local.empty() && isLocal(ai) &&
        getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) ==
            0) {
      local = host;
    }
  }
  freeaddrinfo(list);
  addrinfo numericHints = hints;
  numericHints.ai_flags = AI_NUMERICHOST;
  addrinfo* numeric = nullptr;
  const bool isNumeric = getaddrinfo(masterAddr.c_str(), nullptr, &numericHints, &numeric) == 0;
  if (numeric != nullptr) freeaddrinfo(numeric);
  if (allLoopback && (isNumeric || singleHost)) return {masterAddr, "MASTER_ADDR is loopback"};
  if (allLoopback) {
    return {"", "MASTER_ADDR '" + masterAddr +
                    "' resolves to loopback here but the job may span hosts"};
  }
  if (!local.empty()) return {local, "MASTER_ADDR is an address of this host"};
  return {"", "MASTER_ADDR '" + masterAddr + "' is not an address of this host"};
}

std::string resolveSecret(const std::optional<std::string>& secret) {
  std::string s;
  if (secret) {
    s = *secret;
  } else if (const char* v = std::getenv(kSecretEnv)) {
    s = v;
  }
  if (s.size() > kMaxSecretBytes) {
    C10D_THROW(InvalidArgument, "TCPStore: the shared secret (",
               secret ? "TCPStoreOptions::secret" : kSecretEnv, ") is ", s.size(),
               " bytes, longer than the limit of ", kMaxSecretBytes);
  }
  return s;
}

ServerConfig resolveServerConfig(const TCPStoreServerOptions& options) {
  // The options go in as the table's config (ahead of the environment), keyed by their names.
  std::map<std::string, std::string> given;
  const std::pair<const char*, const std::optional<int64_t>&> limits[] = {
      {"maxConnections", options.limits.maxConnections},
      {"maxKeys", options.limits.maxKeys},
      {"maxValueBytes", options.limits.maxValueBytes},
      {"maxClientBytes", options.limits.maxClientBytes},
      {"maxTotalBytes", options.limits.maxTotalBytes}};
  for (const auto& l : limits) {
    if (l.second) given[l.first] = std::to_string(*l.second);
  }
  if (options.handshakeTimeout) {
    C10D_CHECK_ARG(options.handshakeTimeout->count() > 0, "TCPStore: handshakeTimeout must be > 0 ",
                   "ms, got ", options.handshakeTimeout->count());
    given["handshakeTimeout"] = std::to_string(options.handshakeTimeout->count());
  }
  ServerConfig c = table().load(given);
  c.secret = resolveSecret(options.secret);
  return c;
}

std::string describeServerConfig(const ServerConfig& config) {
  std::ostringstream ss;
  ss << "secret=" << (config.secret.empty() ? "not set" : "set") << " (" << kSecretEnv
     << "): clients must prove they know it (HMAC-SHA256 challenge-response)\n";
  const ServerConfig defaults;
  for (const Setting<ServerConfig>& s : table().rows()) {
    ss << s.key << "=" << s.show(config) << " (" << s.env << "; default " << s.show(defaults)
       << "): " << s.help << "\n";
  }
  return ss.str();
}

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
