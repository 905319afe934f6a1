#include "backends/verbs/fault_hooks.h"

#include "backends/verbs/process_group_verbs.h"
#include "backends/verbs/tcp_transport.h"
#include "c10d/error.h"

namespace c10d {
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

}  // namespace verbs
}  // namespace c10d
