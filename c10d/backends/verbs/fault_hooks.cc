#include "c10d/backends/verbs/fault_hooks.h"

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

void closeConnectionForTesting(ProcessGroup& pg, int peer) {
  auto* v = dynamic_cast<ProcessGroupVerbs*>(&pg);
  C10D_CHECK_ARG(v != nullptr, "closeConnectionForTesting: group ", pg.name(), " is a ",
                 pg.backendName(), " group, not verbs");
  auto* tcp = dynamic_cast<TcpTransport*>(v->transport_.get());
  C10D_CHECK_ARG(tcp != nullptr, "closeConnectionForTesting: group ", pg.name(), " runs on ",
                 v->transportName(), ", not tcp");
  C10D_CHECK_ARG(peer >= 0 && peer < pg.size() && peer != pg.rank(),
                 "closeConnectionForTesting: peer ", peer, " is not another rank of group ",
                 pg.name(), " (rank ", pg.rank(), " of ", pg.size(), ")");
  tcp->shutdownConnection(peer);
}

uint64_t shmSingleCopySendsForTesting(ProcessGroup& pg) {
  auto* v = dynamic_cast<ProcessGroupVerbs*>(&pg);
  C10D_CHECK_ARG(v != nullptr, "shmSingleCopySendsForTesting: group ", pg.name(), " is a ",
                 pg.backendName(), " group, not verbs");
  C10D_CHECK_ARG(v->shm_ != nullptr, "shmSingleCopySendsForTesting: group ", pg.name(), " runs on ",
                 v->transportName(), ", not shm");
  uint64_t n = 0;
  for (int ch = 0; ch < kNumChannels; ++ch) n += v->shm_->offersPosted(ch);
  return n;
}

uint64_t shmCpuMovesForTesting(ProcessGroup& pg) {
  auto* v = dynamic_cast<ProcessGroupVerbs*>(&pg);
  C10D_CHECK_ARG(v != nullptr, "shmCpuMovesForTesting: group ", pg.name(), " is a ",
                 pg.backendName(), " group, not verbs");
  C10D_CHECK_ARG(v->shm_ != nullptr, "shmCpuMovesForTesting: group ", pg.name(), " runs on ",
                 v->transportName(), ", not shm");
  return v->shm_->spreads();
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
