// Backend registry: backends register a factory by name ("gloo", "nccl", "verbs", ...).
//
// The backends built into libc10d (chosen at configure time, see c10d/base/config.h) are registered
// on first use of the registry; programs may register more at any time. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/backend.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// Registers (or replaces) a backend.
void registerBackend(BackendInfo info, BackendFactory factory);
bool isBackendRegistered(const std::string& name);
// Registered names, highest priority first.
std::vector<std::string> registeredBackends();
BackendInfo backendInfo(const std::string& name);  // throws InvalidArgument if unknown
// The highest-priority backend available here; throws Error if none is.
std::string defaultBackend();

// Creates a group of backend `name` ("" or "auto" = defaultBackend()). Throws InvalidArgument
// naming the backend and listing the registered ones if `name` is unknown.
std::shared_ptr<ProcessGroup> createProcessGroup(const std::string& name,
                                                 std::shared_ptr<Store> store, int rank, int size,
                                                 const ProcessGroup::Options& options = {});

C10D_NAMESPACE_END
}  // namespace c10d
