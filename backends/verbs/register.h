// The verbs backend's definition ("verbs", priority 20: above gloo, so it is the default), which
// the registry registers on first use (the list cmake/C10dBackends.cmake generates).
#pragma once

#include "core/backend.h"

namespace c10d {

BackendDefinition verbsBackend();

}  // namespace c10d
