// Backend registry: backends register a factory by name ("gloo", "nccl", "verbs", ...).
//
// The backends built into libc10d (chosen at configure time, see c10d/config.h) are registered on
// first use of the registry; programs may register more at any time. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/process_group.h"

namespace c10d {

using BackendFactory = std::function<std::shared_ptr<ProcessGroup>(
    std::shared_ptr<Store> store, int rank, int size, const ProcessGroup::Options& options)>;

struct BackendInfo {
  std::string name;
  std::string description;  // one line, for --print-config / --help
  // Backends are tried in decreasing priority when the user asks for none.
  int priority = 0;
  // Whether this backend can run here at all (e.g. a GPU is present); when false, `reason`
  // says why, and "auto" selection skips it.
  std::function<bool(std::string* reason)> available;
  // The backend's settings as a group made now would load them (options.config empty, so the
  // environment and the defaults), one per line with where each value came from, plus anything
  // else that decides what it runs (verbs: its algorithm table). For --print-config. Throws
  // InvalidArgument naming a malformed setting. Unset: the backend has no settings.
  std::function<std::string()> describeConfig;
};

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
