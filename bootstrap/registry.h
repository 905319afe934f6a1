// Backend registry: backends register a factory by name ("gloo", "nccl", "verbs", ...).
//
// The backends built into libc10d (chosen at configure time, see base/config.h) are registered on
// first use of the registry; programs may register more at any time. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/process_group.h"

namespace c10d {

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

}  // namespace c10d
