#include "backends/verbs/ib_transport.h"

#include "backends/verbs/ibv_wrap.h"
#include "c10d/error.h"

namespace c10d {
namespace verbs {

bool ibDeviceAvailable(const VerbsConfig&, std::string* reason) {
  return ibvListDevices(reason);
}

std::unique_ptr<Transport> makeIbTransport(Store&, int rank, int, const VerbsConfig& cfg,
                                           Milliseconds) {
  std::string why;
  if (!ibDeviceAvailable(cfg, &why))
    C10D_THROW(InvalidArgument, "verbs: rank ", rank, ": C10D_TRANSPORT=ibverbs but ", why);
  C10D_THROW(Error, "verbs: rank ", rank, ": the ibverbs data path is not implemented yet");
}

}  // namespace verbs
}  // namespace c10d
