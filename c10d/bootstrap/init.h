// Initialising a process group from a URL or the environment, as torch.distributed does.
//
// Init methods
//   env://                      MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (LOCAL_RANK optional)
//   tcp://HOST:PORT?rank=R&world_size=N
//   file:///ABS/PATH?rank=R&world_size=N
//   etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ttl=S&rank=R&world_size=N]   (library c10d_store_etcd)
//   redis://[:PASSWORD@]HOST:PORT/PREFIX[?rank=R&world_size=N]          (library c10d_store_redis)
// rank / world_size in InitOptions override the URL's and the environment's. For env:// and tcp://
// rank 0 runs the TCPStore server in-process; the other ranks connect to it (retrying with backoff
// until the timeout). file:// uses a FileStore shared by world_size users. etcd:// and redis://
// (any scheme a store library registers, c10d/store/store_registry.h, loaded on first use) use that
// server as the store, every rank a client; rank and world size come from the query, else RANK
// and WORLD_SIZE; the other query keys belong to the store (etcd's ttl).
//
// The TCPStore (docs/stores.md "Store security"): every rank takes the shared secret from
// C10D_STORE_SECRET (c10drun sets a fresh one per single-node job) and the server's limits from
// C10D_STORE_MAX_*. Rank 0's server listens on the loopback address when MASTER_ADDR is one (a
// single-host job), on the MASTER_ADDR interface when it is an address of this host, else on every
// interface; C10D_STORE_BIND overrides ("*" = every interface). See tcpstore::chooseBindAddress.
//
// Every malformed input is an InvalidArgument naming the URL (or the variable) and what is wrong:
// unknown scheme, missing host or port, port out of range, non-numeric rank, rank >= world_size,
// unknown query key, relative file path...
#pragma once

#include <map>
#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

struct InitOptions {
  std::string backend;  // "" = defaultBackend()
  std::string initMethod = "env://";
  int rank = -1;       // -1 = from the URL / environment
  int worldSize = -1;  // -1 = from the URL / environment
  Milliseconds timeout = kDefaultTimeout;
  std::string groupName = "world";
  std::map<std::string, std::string> config;  // backend settings (ProcessGroup::Options::config)
  std::shared_ptr<Store> store;               // when set, used as is instead of initMethod's store
};

// The parts of an init URL. Query keys are kept as given.
struct InitUrl {
  std::string scheme;    // "env", "tcp", "file"
  std::string host;      // tcp
  int port = -1;         // tcp
  std::string path;      // file
  std::string storeUrl;  // a store library's scheme: the URL without rank / world_size
  std::map<std::string, std::string> query;
};
InitUrl parseInitUrl(const std::string& url);

// The store, rank and world size an init method leads to (the store connected and ready).
struct Rendezvous {
  std::shared_ptr<Store> store;
  int rank = -1;
  int worldSize = -1;
};
Rendezvous rendezvous(const std::string& url, int rank = -1, int worldSize = -1,
                      Milliseconds timeout = kDefaultStoreTimeout);

// Creates the group as described above.
std::shared_ptr<ProcessGroup> init(const InitOptions& options = {});

// LOCAL_RANK (0 when unset).
int localRank();

C10D_NAMESPACE_END
}  // namespace c10d
