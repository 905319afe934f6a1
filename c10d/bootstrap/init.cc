// Init URLs, the environment, and rendezvous: URL -> (store, rank, world size) -> process group.
#include "c10d/bootstrap/init.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "c10d/base/abi.h"
#include "c10d/base/launch_env.h"
#include "c10d/base/settings.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/file_store.h"
#include "c10d/store/store_registry.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_config.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

constexpr const char* kExpected =
    "expected env://, tcp://HOST:PORT?rank=R&world_size=N, file:///ABS/PATH?rank=R&world_size=N, "
    "or a store library's scheme (etcd://HOST:PORT/PREFIX, redis://HOST:PORT/PREFIX)";

[[noreturn]] void badUrl(const std::string& url, const std::string& problem) {
  C10D_THROW(InvalidArgument, "init URL '", url, "': ", problem);
}

// rank and world_size go to `out`; other keys are an error, or, with `others`, kept there
// ("k=v&k2=v2") for a store library's URL.
void parseQuery(const std::string& url, const std::string& q,
                std::map<std::string, std::string>* out, std::string* others = nullptr) {
  size_t pos = 0;
  while (pos <= q.size()) {
    size_t amp = q.find('&', pos);
    if (amp == std::string::npos) amp = q.size();
    const std::string item = q.substr(pos, amp - pos);
    pos = amp + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) badUrl(url, "query item '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key != "rank" && key != "world_size" && others != nullptr) {
      *others += (others->empty() ? "" : "&") + item;
      continue;
    }
    if (key != "rank" && key != "world_size") {
      badUrl(url, "unknown query key '" + key + "' (known: rank, world_size)");
    }
    if (out->count(key) != 0) badUrl(url, "query key '" + key + "' given twice");
    long long v = 0;
    if (!parseInteger(value, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                      &v)) {
      badUrl(url, key + "='" + value + "' is not an integer");
    }
    if (v < 0) badUrl(url, key + "=" + value + " is negative");
    if (key == "world_size" && v == 0) badUrl(url, "world_size=0 (must be >= 1)");
    (*out)[key] = value;
  }
}

void parseHostPort(const std::string& url, const std::string& hp, InitUrl* u) {
  if (hp.empty()) badUrl(url, "missing host and port (expected tcp://HOST:PORT)");
  std::string portStr;
  if (hp[0] == '[') {
    const size_t close = hp.find(']');
    if (close == std::string::npos) badUrl(url, "unterminated '[' in IPv6 host");
    u->host = hp.substr(1, close - 1);
    const std::string rest = hp.substr(close + 1);
    if (rest.empty()) badUrl(url, "missing port (expected tcp://[IPV6]:PORT)");
    if (rest[0] != ':') badUrl(url, "unexpected '" + rest + "' after the IPv6 host");
    portStr = rest.substr(1);
  } else {
    const size_t colon = hp.find(':');
    if (colon == std::string::npos) badUrl(url, "missing port (expected tcp://HOST:PORT)");
    if (hp.find(':', colon + 1) != std::string::npos) {
      badUrl(url, "too many ':' (IPv6 hosts go in brackets: tcp://[::1]:PORT)");
    }
    u->host = hp.substr(0, colon);
    portStr = hp.substr(colon + 1);
  }
  if (u->host.empty()) badUrl(url, "missing host (expected tcp://HOST:PORT)");
  if (portStr.empty()) badUrl(url, "missing port (expected tcp://HOST:PORT)");
  if (portStr.find('/') != std::string::npos) badUrl(url, "unexpected path after the port");
  long long port = 0;
  if (!parseInteger(portStr, std::numeric_limits<long long>::min(),
                    std::numeric_limits<long long>::max(), &port)) {
    badUrl(url, "port '" + portStr + "' is not a number");
  }
  if (port < 1 || port > 65535) badUrl(url, "port " + portStr + " is out of range [1, 65535]");
  u->port = static_cast<int>(port);
}

}  // namespace

InitUrl parseInitUrl(const std::string& url) {
  const size_t sep = url.find("://");
  if (sep == std::string::npos) badUrl(url, std::string("missing scheme; ") + kExpected);
  InitUrl u;
  u.scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  const bool builtin = u.scheme == "env" || u.scheme == "tcp" || u.scheme == "file";
  std::string others;
  const size_t q = rest.find('?');
  if (q != std::string::npos) {
    parseQuery(url, rest.substr(q + 1), &u.query, builtin ? nullptr : &others);
    rest = rest.substr(0, q);
  }
  if (u.query.count("rank") && u.query.count("world_size") &&
      std::stoi(u.query["rank"]) >= std::stoi(u.query["world_size"])) {
    badUrl(url, "rank=" + u.query["rank"] + " is not below world_size=" + u.query["world_size"]);
  }
  if (u.scheme == "env") {
    if (!rest.empty()) badUrl(url, "unexpected '" + rest + "' after env://");
  } else if (u.scheme == "tcp") {
    parseHostPort(url, rest, &u);
  } else if (u.scheme == "file") {
    if (rest.empty()) badUrl(url, "missing file path (expected file:///ABS/PATH)");
    if (rest[0] != '/') {
      badUrl(url,
             "file path '" + rest + "' is relative (expected file:///ABS/PATH, three slashes)");
    }
    u.path = rest;
  } else {
    std::string reason;
    if (!findStoreScheme(u.scheme, &reason)) {
      badUrl(url, "unknown scheme '" + u.scheme + "' (" + reason + "); " + kExpected);
    }
    u.storeUrl = u.scheme + "://" + rest + (others.empty() ? "" : "?" + others);
  }
  return u;
}

int localRank() {
  return envInt("LOCAL_RANK", 0);
}

namespace {

// The first of: the argument (>= 0), the URL's query, the launcher's variables (env:// and the
// store libraries' schemes: torchrun's, Open MPI's or Slurm's, see c10d/base/launch_env.h).
int pick(const std::string& url, const InitUrl& u, const LaunchEnv& launch, int given,
         const char* queryKey, bool wantRank) {
  if (given >= 0) return given;
  auto it = u.query.find(queryKey);
  if (it != u.query.end()) return std::stoi(it->second);
  if (u.scheme == "env" || !u.storeUrl.empty()) {
    if (launch.launcher.empty()) {  // no complete set: each torchrun variable on its own
      const char* envName = wantRank ? "RANK" : "WORLD_SIZE";
      const int v = envInt(envName, -1);
      if (v >= 0) return v;
      C10D_THROW(InvalidArgument, "init URL '", url, "': environment variable ", envName,
                 " is not set (nor ",
                 wantRank ? "OMPI_COMM_WORLD_RANK or SLURM_PROCID"
                          : "OMPI_COMM_WORLD_SIZE or SLURM_NTASKS",
                 ", and no ", queryKey, " was given)");
    }
    return wantRank ? launch.rank : launch.worldSize;
  }
  C10D_THROW(InvalidArgument, "init URL '", url, "': no ", queryKey, " given (add ?", queryKey,
             "=N to the URL or pass it explicitly)");
}

}  // namespace

Rendezvous rendezvous(const std::string& url, int rank, int worldSize, Milliseconds timeout) {
  const InitUrl u = parseInitUrl(url);
  const LaunchEnv launch =
      u.scheme == "env" || !u.storeUrl.empty() ? detectLaunchEnv() : LaunchEnv{};
  Rendezvous rv;
  rv.worldSize = pick(url, u, launch, worldSize, "world_size", false);
  rv.rank = pick(url, u, launch, rank, "rank", true);
  C10D_CHECK_ARG(rv.worldSize >= 1, "init URL '", url, "': world size ", rv.worldSize,
                 " (must be >= 1)");
  C10D_CHECK_ARG(rv.rank < rv.worldSize, "init URL '", url, "': rank ", rv.rank,
                 " is not below world size ", rv.worldSize);
  C10D_CHECK_ARG(timeout >= Milliseconds::zero(), "init URL '", url, "': negative timeout ",
                 timeout.count(), " ms");

  if (u.scheme == "file") {
    rv.store = std::make_shared<FileStore>(u.path, rv.worldSize, timeout);
    return rv;
  }
  if (!u.storeUrl.empty()) {
    rv.store = createStoreFromUrl(u.storeUrl, timeout);
    return rv;
  }
  TCPStoreOptions o;
  if (u.scheme == "env") {
    if (launch.masterAddr.empty()) {
      C10D_THROW(InvalidArgument, "init URL '", url,
                 "': environment variable MASTER_ADDR is not set",
                 launch.launcher == "mpirun"
                     ? " (mpirun across hosts: pass -x MASTER_ADDR=<rank 0's host> -x MASTER_PORT)"
                     : "");
    }
    if (launch.masterPort < 0) {
      C10D_THROW(InvalidArgument, "init URL '", url,
                 "': environment variable MASTER_PORT is not set");
    }
    o.host = launch.masterAddr;
    o.port = static_cast<uint16_t>(launch.masterPort);
  } else {
    o.host = u.host;
    o.port = static_cast<uint16_t>(u.port);
  }
  o.isServer = rv.rank == 0;
  if (o.isServer) {
    // Listen only where the clients can come from (loopback for a single-host job); the secret
    // (C10D_STORE_SECRET) and the limits come from the environment inside TCPStore.
    const int localSize =
        u.scheme == "env" ? launch.localWorldSize : envInt("LOCAL_WORLD_SIZE", -1, 1);
    const bool singleHost = localSize == rv.worldSize;
    const tcpstore::BindChoice bind = tcpstore::chooseBindAddress(o.host, singleHost);
    o.bindAddress = bind.address;
    if (bind.address.empty() && tcpstore::resolveSecret(std::nullopt).empty()) {
      std::fprintf(
          stderr,
          "c10d: warning: rank 0's TCPStore listens on every interface (%s) without "
          "authentication: anyone who can reach port %u can read and write its keys; "
          "set the same C10D_STORE_SECRET on every node (docs/stores.md, \"Store security\")\n",
          bind.reason.c_str(), static_cast<unsigned>(o.port));
    }
  }
  o.numWorkers = rv.worldSize;
  o.timeout = timeout;
  rv.store = std::make_shared<TCPStore>(o);
  return rv;
}

std::shared_ptr<ProcessGroup> init(const InitOptions& options) {
  Rendezvous rv;
  if (options.store) {
    C10D_CHECK_ARG(options.rank >= 0 && options.worldSize >= 1 && options.rank < options.worldSize,
                   "init: with an explicit store, rank and worldSize must be given (rank ",
                   options.rank, ", worldSize ", options.worldSize, ")");
    rv.store = options.store;
    rv.rank = options.rank;
    rv.worldSize = options.worldSize;
  } else {
    rv = rendezvous(options.initMethod, options.rank, options.worldSize, options.timeout);
  }
  ProcessGroup::Options pgo;
  pgo.timeout = options.timeout;
  pgo.groupName = options.groupName;
  pgo.config = options.config;
  return createProcessGroup(options.backend, rv.store, rv.rank, rv.worldSize, pgo);
}

C10D_NAMESPACE_END
}  // namespace c10d
