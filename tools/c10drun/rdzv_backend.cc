#include "tools/c10drun/rdzv_backend.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/fd.h"
#include "c10d/base/settings.h"
#include "c10d/store/store_registry.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_config.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

std::pair<std::string, int> parseEndpoint(const std::string& endpoint, int defaultPort) {
  std::string host = endpoint;
  std::string port;
  if (!endpoint.empty() && endpoint[0] == '[') {
    const size_t close = endpoint.find(']');
    if (close == std::string::npos) {
      throw UsageError("--rdzv-endpoint '" + endpoint + "': unterminated '['");
    }
    host = endpoint.substr(1, close - 1);
    const std::string rest = endpoint.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') throw UsageError("--rdzv-endpoint '" + endpoint + "': junk after ']'");
      port = rest.substr(1);
    }
  } else if (const size_t colon = endpoint.rfind(':'); colon != std::string::npos) {
    if (endpoint.find(':') != colon) {
      throw UsageError("--rdzv-endpoint '" + endpoint +
                       "': IPv6 hosts go in brackets ([::1]:PORT)");
    }
    host = endpoint.substr(0, colon);
    port = endpoint.substr(colon + 1);
  }
  if (host.empty()) throw UsageError("--rdzv-endpoint '" + endpoint + "': missing host");
  int p = defaultPort;
  if (!port.empty()) {
    long long v = 0;
    if (!parseInteger(port, 1, 65535, &v)) {
      throw UsageError("--rdzv-endpoint '" + endpoint + "': port '" + port +
                       "' is not in [1, 65535]");
    }
    p = static_cast<int>(v);
  }
  return {host, p};
}

bool isLocalAddress(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return false;
  bool local = false;
  for (addrinfo* ai = list; ai != nullptr && !local; ai = ai->ai_next) {
    Fd fd(socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    local = bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0;  // port 0 from getaddrinfo
  }
  freeaddrinfo(list);
  return local;
}

RendezvousStore openEtcdRendezvousStore(const std::string& endpoint, const std::string& runId,
                                        const RendezvousConf& conf) {
  // etcd://HOST:PORT[,HOST:PORT...]/c10drun/<run id>: the EtcdStore library (c10d/store/etcd/),
  // found by its URL scheme. Its keys hang on a lease that the store keeps alive while this
  // launcher lives, so a job whose launchers all died leaves nothing behind (ttl 60 s).
  if (endpoint.empty()) throw UsageError("--rdzv-backend etcd needs --rdzv-endpoint HOST:PORT");
  if (runId.find_first_of("?&#") != std::string::npos) {
    throw UsageError("--rdzv-id '" + runId +
                     "': '?', '&' and '#' cannot appear in an etcd key prefix");
  }
  std::string endpoints;  // each HOST[:PORT] checked, port 2379 (etcd's) when left out
  for (size_t pos = 0; pos <= endpoint.size();) {
    size_t comma = endpoint.find(',', pos);
    if (comma == std::string::npos) comma = endpoint.size();
    auto [host, port] = parseEndpoint(endpoint.substr(pos, comma - pos), 2379);
    if (!endpoints.empty()) endpoints += ",";
    endpoints += (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                 std::to_string(port);
    pos = comma + 1;
  }
  RendezvousStore rs;
  rs.store = createStoreFromUrl("etcd://" + endpoints + "/c10drun/" + runId, conf.joinTimeout);
  rs.store->setTimeout(conf.readTimeout);
  rs.where = "etcd store at " + endpoint + " (prefix c10drun/" + runId + ")";
  return rs;
}

RendezvousStore openRendezvousStore(const Options& options,
                                    const std::function<void(const std::string&)>& log) {
  const RendezvousConf& conf = options.rdzvConf;
  if (options.rdzvBackend == "etcd") {
    RendezvousStore rs = openEtcdRendezvousStore(options.rdzvEndpoint, options.rdzvId, conf);
    log("rendezvous through the " + rs.where);
    return rs;
  }
  if (options.rdzvBackend != "c10d") {
    throw UsageError("--rdzv-backend '" + options.rdzvBackend + "' has no store");
  }
  auto [host, port] = parseEndpoint(options.rdzvEndpoint, kDefaultRdzvPort);
  const std::string where = host + ":" + std::to_string(port);
  TCPStoreOptions o;
  o.host = host;
  o.port = static_cast<uint16_t>(port);
  o.timeout = conf.joinTimeout;  // connecting: the host may start after us
  const bool tryHost = conf.isHost.value_or(isLocalAddress(host));
  RendezvousStore rs;
  if (tryHost) {
    o.isServer = true;
    o.bindAddress = tcpstore::chooseBindAddress(host, false).address;
    try {
      rs.store = std::make_shared<TCPStore>(o);
      rs.hosting = true;
    } catch (const Error& e) {
      // Another launcher on this machine was first: use its server (unless told to host).
      if (conf.isHost.value_or(false) || std::strstr(e.what(), "EADDRINUSE") == nullptr) throw;
    }
  }
  if (!rs.store) {
    o.isServer = false;
    o.bindAddress.clear();
    rs.store = std::make_shared<TCPStore>(o);
  }
  rs.store->setTimeout(conf.readTimeout);
  rs.where = "c10d store at " + where + (rs.hosting ? " (hosted by this launcher)" : "");
  log("rendezvous through the " + rs.where);
  return rs;
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
