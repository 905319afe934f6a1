// The store behind c10drun's dynamic rendezvous, by --rdzv-backend: the factory that turns
// (backend, endpoint) into a connected Store for ElasticRendezvous (tools/c10drun/rendezvous.h).
//
//   c10d  a TCPStore at --rdzv-endpoint HOST[:PORT] (port 29400 when left out, as torchrun). The
//         launcher on the machine that has HOST's address, and that binds the port first, hosts
//         the server on a thread of its own; every other launcher connects (retrying until
//         join_timeout). --rdzv-conf is_host=true|false forces either. The store lives as long as
//         its host launcher: that node must outlive the job (as with torchrun's c10d backend).
//         The secret is C10D_STORE_SECRET, as for every TCPStore.
//   etcd  an EtcdStore (c10d/store/etcd/) at --rdzv-endpoint HOST:PORT[,HOST:PORT...] (an etcd v3
//         server or cluster; port 2379 when left out), keys under c10drun/<run id>/ on a lease the
//         launcher keeps alive (they expire 60 s after the last launcher of the job is gone).
//         No launcher hosts anything: the job outlives any one node.
//
// Blocks at most join_timeout (connecting); then each request at most read_timeout. Errors: a
// malformed endpoint is a UsageError; a store that cannot be reached, the store's own error.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"
#include "tools/c10drun/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

constexpr int kDefaultRdzvPort = 29400;

struct RendezvousStore {
  std::shared_ptr<Store> store;
  bool hosting = false;  // this launcher runs the server (it must stay until the job is done)
  std::string where;     // "c10d store at 127.0.0.1:29400 (hosted here)", for messages
};

// Opens the store of `options.rdzvBackend`; `log` gets one line saying where it is.
RendezvousStore openRendezvousStore(const Options& options,
                                    const std::function<void(const std::string&)>& log);

// --rdzv-backend etcd: connect an EtcdStore to `endpoint` (HOST:PORT of an etcd v3 server), its
// keys under a prefix of `runId`, requests bounded by conf.readTimeout. The one place to plug it
// in.
RendezvousStore openEtcdRendezvousStore(const std::string& endpoint, const std::string& runId,
                                        const RendezvousConf& conf);

// HOST[:PORT] or [IPV6][:PORT]; UsageError naming the endpoint when malformed.
std::pair<std::string, int> parseEndpoint(const std::string& endpoint, int defaultPort);

// Whether `host` resolves to an address of this machine (a bind to it succeeds).
bool isLocalAddress(const std::string& host);

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
