// The "gloo" backend's definition, which the registry (bootstrap/registry.h) registers on first
// use when the build has Gloo (the list cmake/C10dBackends.cmake generates).
#pragma once

#include "core/backend.h"

namespace c10d {

BackendDefinition glooBackend();

}  // namespace c10d
