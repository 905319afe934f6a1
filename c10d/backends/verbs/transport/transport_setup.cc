#include "c10d/backends/verbs/transport/transport_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/ibverbs/ib_transport.h"
#include "c10d/backends/verbs/transport/mixed_transport.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/prefix_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

// The kernel's boot id and the hostname: equal on ranks that can share memory.
std::string hostIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return bootId() + "|" + host;
}

}  // namespace

TransportSetup connectTransport(const std::shared_ptr<Store>& store, const std::string& prefix,
                                int rank, int size, const VerbsConfig& config,
                                const RankWait& how) {
  // HOST|PID|CPUS: where the rank is, its process, and the CPUs it may run on (cpuShareKey, no
  // '|'; HOST may hold some).
  const std::string myHost = config.hostId.empty() ? hostIdentity() : config.hostId;
  store->set(prefix + "host/" + std::to_string(rank),
             myHost + "|" + std::to_string(getpid()) + "|" + cpuShareKey());
  std::vector<std::string> keys;
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) {
    keys.push_back(prefix + "host/" + std::to_string(r));
    ranks.push_back(r);
  }
  waitForRanks(*store, keys, ranks, how);
  std::vector<Bytes> ids = store->multiGet(keys);
  std::vector<int> pids(size), localRanks;
  std::vector<std::string> hostIds(size), cpus(size);
  for (int r = 0; r < size; ++r) {
    const std::string entry = c10d::toString(ids[r]);
    const size_t cpuBar = entry.rfind('|');
    const std::string id = entry.substr(0, cpuBar);  // HOST|PID (all of it without a '|')
    if (cpuBar != std::string::npos) cpus[r] = entry.substr(cpuBar + 1);
    const size_t bar = id.rfind('|');
    char* end = nullptr;
    const long pid = bar == std::string::npos ? 0 : std::strtol(id.c_str() + bar + 1, &end, 10);
    if (bar == std::string::npos || end == id.c_str() + bar + 1 || *end != '\0' || pid <= 0 ||
        pid > std::numeric_limits<int>::max()) {
      C10D_THROW(Error, how.group, ": rank ", rank, ": the store's entry of rank ", r, " (",
                 keys[r], ") is '", entry.substr(0, 80),
                 "', not HOST|PID|CPUS: a store shared with another job or c10d version?");
    }
    pids[r] = static_cast<int>(pid);
    hostIds[r] = id.substr(0, bar);
    if (hostIds[r] == myHost) localRanks.push_back(r);
  }
  // The waits' automatic settings depend on how many ranks share this host's CPUs: its own, the
  // launcher's LOCAL_WORLD_SIZE, and any of the group's on other "hosts" of this machine.
  VerbsConfig cfg = config;
  const int hostRanks =
      std::max(ranksOnThisHost(static_cast<int>(localRanks.size())), ranksSharingCpus(cpus, rank));
  cfg.busyUs = resolveBusyUs(config.busyUs, hostRanks);
  cfg.spinUs = resolveSpinUs(config.spinUs, hostRanks);
  TransportSetup out;
  out.hosts = HostLayout::fromHostIds(hostIds);
  out.pids = pids;
  const bool allLocal = static_cast<int>(localRanks.size()) == size;

  std::string choice = cfg.transport;
  std::string ibReason;
  const bool ib =
      choice == "ibverbs" || (choice == "auto" && !allLocal && ibDeviceAvailable(cfg, &ibReason));
  if (choice == "auto") {
    if (allLocal)
      choice = "shm";
    else if (localRanks.size() > 1)
      choice = "mixed";  // shm to the ranks on this host, the network to the others
    else
      choice = ib ? "ibverbs" : "tcp";
  }
  auto net = [&](Store& s) -> std::unique_ptr<Transport> {
    if (ib) return makeIbTransport(s, rank, size, cfg, how.timeout);
    return std::make_unique<TcpTransport>(s, rank, size, cfg, how.timeout);
  };
  if (choice == "shm") {
    C10D_CHECK_ARG(allLocal, "verbs: C10D_TRANSPORT=shm but the ranks of group ", how.group,
                   " are not all on one host");
    PrefixStore ps(prefix + "shm", store);
    auto shm = std::make_unique<ShmTransport>(ps, rank, size, pids, cfg, how.timeout);
    out.shm = shm.get();
    out.transport = std::move(shm);
  } else if (choice == "mixed") {
    // One shm workspace per host (keyed by its lowest rank), one network mesh for the group.
    PrefixStore shmStore(prefix + "shm/" + std::to_string(localRanks[0]), store);
    const int localRank = static_cast<int>(std::find(localRanks.begin(), localRanks.end(), rank) -
                                           localRanks.begin());
    std::vector<int> localPids;
    for (int r : localRanks) localPids.push_back(pids[r]);
    auto shm = std::make_unique<ShmTransport>(
        shmStore, localRank, static_cast<int>(localRanks.size()), localPids, cfg, how.timeout);
    shm->setGroupRanks(localRanks);
    PrefixStore netStore(prefix + (ib ? "ibverbs" : "tcp"), store);
    out.transport =
        std::make_unique<MixedTransport>(std::move(shm), localRanks, net(netStore), size);
  } else {
    PrefixStore ps(prefix + choice, store);
    out.transport = net(ps);
  }
  return out;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
