// The "gloo" backend's definition, which the registry (c10d/bootstrap/registry.h) registers on
// first use when the build has Gloo (the list cmake/C10dBackends.cmake generates).
#pragma once

#include "c10d/base/abi.h"
#include "c10d/core/backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

BackendDefinition glooBackend();

C10D_NAMESPACE_END
}  // namespace c10d
