#include "store/tcp/tcp_store_config.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/error.h"
#include "base/socket.h"
#include "store/tcp/tcp_store_protocol.h"

namespace c10d {
namespace tcpstore {
namespace {

// One integer setting: where it lives in the options, its variable, default and bounds.
struct Setting {
  const char* name;
  const char* env;
  int64_t defaultValue;
  int64_t min;
  int64_t max;
  bool bytes;  // accepts K/M/G suffixes
  const char* description;
  std::optional<int64_t> TCPStoreLimits::*field;
  int64_t ServerConfig::*out;
};

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = kKiB * 1024;
constexpr int64_t kGiB = kMiB * 1024;

const Setting kSettings[] = {
    {"maxConnections", "C10D_STORE_MAX_CONNECTIONS", 65536, 1, 1 << 24, false,
     "open connections, handshaking ones included; more are refused at their hello",
     &TCPStoreLimits::maxConnections, &ServerConfig::maxConnections},
    {"maxKeys", "C10D_STORE_MAX_KEYS", 1 << 20, 1, int64_t{1} << 40, false,
     "keys stored; a request creating one more fails", &TCPStoreLimits::maxKeys,
     &ServerConfig::maxKeys},
    {"maxValueBytes", "C10D_STORE_MAX_VALUE_BYTES", 64 * kMiB, 0, kMaxValueBytes, true,
     "bytes of one value (set, append, compareSet, multiSet)", &TCPStoreLimits::maxValueBytes,
     &ServerConfig::maxValueBytes},
    {"maxClientBytes", "C10D_STORE_MAX_CLIENT_BYTES", 4 * kGiB, 0, int64_t{1} << 50, true,
     "key + value bytes stored by one connection (a key is charged to its last writer)",
     &TCPStoreLimits::maxClientBytes, &ServerConfig::maxClientBytes},
    {"maxTotalBytes", "C10D_STORE_MAX_TOTAL_BYTES", 16 * kGiB, 0, int64_t{1} << 50, true,
     "key + value bytes stored in all", &TCPStoreLimits::maxTotalBytes,
     &ServerConfig::maxTotalBytes},
};

constexpr const char* kHandshakeEnv = "C10D_STORE_HANDSHAKE_TIMEOUT_MS";
constexpr int64_t kDefaultHandshakeMs = 30000;

int64_t fromEnv(const char* env, int64_t fallback, int64_t min, int64_t max, bool bytes) {
  const char* v = std::getenv(env);
  if (v == nullptr || *v == '\0') return fallback;
  int64_t out = 0;
  if (!parseByteCount(v, &out) ||
      (!bytes && std::string(v).find_first_not_of("0123456789") != std::string::npos)) {
    C10D_THROW(InvalidArgument, "environment variable ", env, "='", v, "' is not ",
               bytes ? "a byte count (digits with an optional K, M or G suffix)" : "an integer");
  }
  if (out < min || out > max) {
    C10D_THROW(InvalidArgument, "environment variable ", env, "=", v, " is out of range [", min,
               ", ", max, "]");
  }
  return out;
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

bool parseByteCount(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  uint64_t scale = 1;
  if (i < text.size()) {
    if (i + 1 != text.size()) return false;
    switch (text[i]) {
      case 'K':
      case 'k':
        scale = kKiB;
        break;
      case 'M':
      case 'm':
        scale = kMiB;
        break;
      case 'G':
      case 'g':
        scale = kGiB;
        break;
      default:
        return false;
    }
  }
  if (v > static_cast<uint64_t>(INT64_MAX) / scale) return false;
  *out = static_cast<int64_t>(v * scale);
  return true;
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
  ServerConfig c;
  c.secret = resolveSecret(options.secret);
  for (const Setting& s : kSettings) {
    const std::optional<int64_t>& given = options.limits.*(s.field);
    if (given) {
      C10D_CHECK_ARG(*given >= s.min && *given <= s.max, "TCPStore: limit ", s.name, " = ", *given,
                     " is out of range [", s.min, ", ", s.max, "]");
      c.*(s.out) = *given;
    } else {
      c.*(s.out) = fromEnv(s.env, s.defaultValue, s.min, s.max, s.bytes);
    }
  }
  if (options.handshakeTimeout) {
    C10D_CHECK_ARG(options.handshakeTimeout->count() > 0, "TCPStore: handshakeTimeout must be > 0 ",
                   "ms, got ", options.handshakeTimeout->count());
    c.handshakeTimeout = *options.handshakeTimeout;
  } else {
    c.handshakeTimeout =
        Milliseconds(fromEnv(kHandshakeEnv, kDefaultHandshakeMs, 1, int64_t{1} << 31, false));
  }
  return c;
}

std::string describeServerConfig(const ServerConfig& config) {
  std::ostringstream ss;
  ss << "secret=" << (config.secret.empty() ? "not set" : "set") << " (" << kSecretEnv
     << "): clients must prove they know it (HMAC-SHA256 challenge-response)\n";
  for (const Setting& s : kSettings) {
    ss << s.name << "=" << config.*(s.out) << " (" << s.env << "; default " << s.defaultValue
       << "): " << s.description << "\n";
  }
  ss << "handshakeTimeout=" << config.handshakeTimeout.count() << " ms (" << kHandshakeEnv
     << "; default " << kDefaultHandshakeMs
     << "): a connection that has not finished its handshake by then is closed\n";
  return ss.str();
}

}  // namespace tcpstore
}  // namespace c10d
