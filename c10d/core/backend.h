// What a backend is to the rest of c10d: a description and a factory of groups. Backends define
// one (backends/<name>/register.h); the registry above them (c10d/bootstrap/registry.h) holds them
// by name.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

using BackendFactory = ProcessGroup::Factory;

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
  // A backend on CUDA streams: the stream its collectives run on for `device`, as torch's
  // current stream is (the C ABI's c10d_cuda_set_current_stream / c10d_cuda_current_stream).
  // Unset for backends without streams.
  std::function<void(int device, void* stream)> setCurrentStream;
  std::function<void*(int device)> currentStream;
};

// What a backend provides: the registry (c10d/bootstrap/registry.h) registers each built-in
// backend's definition, so no backend includes the registry.
struct BackendDefinition {
  BackendInfo info;
  BackendFactory factory;
};

C10D_NAMESPACE_END
}  // namespace c10d
