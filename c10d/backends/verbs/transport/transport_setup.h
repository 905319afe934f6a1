// How a verbs group finds its peers and picks its transport, apart from the ProcessGroup: every
// rank publishes its host identity and pid through the Store, waits for everyone's, and connects
// the transport C10D_TRANSPORT names, or for "auto": shm when all ranks share a host, shm inside
// each host plus the network across hosts (MixedTransport) when some share one, else the network
// (ibverbs where a device is usable, tcp otherwise).
//
// Blocks until every rank arrived and connected, or throws: TimeoutError naming the ranks that
// never published (c10d/core/rendezvous_wait.h), InvalidArgument for a transport that cannot run
// here (C10D_TRANSPORT=shm across hosts), CommError / Error from the transports' own setup.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "c10d/backends/verbs/comm.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/core/rendezvous_wait.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

class ShmTransport;

struct TransportSetup {
  std::unique_ptr<Transport> transport;
  // The transport when it is one shm workspace spanning the group (its barrier and staging slots
  // serve the shm algorithms), else null.
  ShmTransport* shm = nullptr;
  HostLayout hosts;       // which ranks share a host
  std::vector<int> pids;  // each rank's process id (meaningful on its own host only)
};

// `prefix`: this group's store namespace (every rank passes the same one); `how`: the group's name,
// this rank, the timeout and the progress interval of the wait for the others.
TransportSetup connectTransport(const std::shared_ptr<Store>& store, const std::string& prefix,
                                int rank, int size, const VerbsConfig& cfg, const RankWait& how);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
