// Built when libibverbs' headers are absent: the ibverbs transport does not exist here.
#include "c10d/backends/verbs/transport/ibverbs/ib_transport.h"

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

bool ibDeviceAvailable(const VerbsConfig&, std::string* reason) {
  if (reason) *reason = "this build of c10d has no ibverbs transport (libibverbs-dev was missing)";
  return false;
}

std::unique_ptr<Transport> makeIbTransport(Store&, int rank, int, const VerbsConfig&,
                                           Milliseconds) {
  C10D_THROW(InvalidArgument, "verbs: rank ", rank,
             ": C10D_TRANSPORT=ibverbs, but this build has no ibverbs transport (rebuild with "
             "libibverbs-dev installed)");
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
