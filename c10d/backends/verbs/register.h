// The verbs backend's definition ("verbs", priority 20: above gloo, so it is the default), which
// the registry registers on first use (the list cmake/C10dBackends.cmake generates).
#pragma once

#include "c10d/base/abi.h"
#include "c10d/core/backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

BackendDefinition verbsBackend();

C10D_NAMESPACE_END
}  // namespace c10d
