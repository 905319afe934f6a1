#include "c10d/backends/verbs/register.h"

#include <sstream>

#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/base/abi.h"
#include "c10d/core/backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

BackendDefinition verbsBackend() {
  BackendInfo info;
  info.name = "verbs";
  info.description =
      "c10d's own engine: shared memory on one host, ibverbs or tcp across hosts (CPU tensors)";
  info.priority = 20;
  info.available = [](std::string*) { return true; };
  info.describeConfig = [] {
    std::ostringstream os;
    verbs::printConfig(os, verbs::VerbsConfig::load({}));
    return os.str();
  };
  return {
      info,
      [](std::shared_ptr<Store> store, int rank, int size, const ProcessGroup::Options& options) {
        return std::make_shared<verbs::ProcessGroupVerbs>(std::move(store), rank, size, options);
      }};
}

C10D_NAMESPACE_END
}  // namespace c10d
