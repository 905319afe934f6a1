#include "c10d/backends/gloo/register.h"

#include "c10d/backends/gloo/config.h"
#include "c10d/backends/gloo/process_group_gloo.h"
#include "c10d/base/abi.h"
#include "c10d/core/backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

BackendDefinition glooBackend() {
  BackendInfo info;
  info.name = "gloo";
  info.description = "Gloo 0.5 over TCP: every collective for CPU tensors";
  info.priority = 10;
  info.available = [](std::string* /*reason*/) { return true; };
  info.describeConfig = [] { return describeGlooConfig(parseGlooConfig({})); };
  return {std::move(info), [](std::shared_ptr<Store> store, int rank, int size,
                              const ProcessGroup::Options& options) {
            return std::static_pointer_cast<ProcessGroup>(
                std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, options));
          }};
}

C10D_NAMESPACE_END
}  // namespace c10d
