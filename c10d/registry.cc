// The backend registry: a map under a mutex, filled with the built-in backends on first use.
#include "c10d/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "c10d/config.h"

#if C10D_HAVE_GLOO && defined(__has_include)
#if __has_include("backends/gloo/register.h")
#include "backends/gloo/register.h"
#define C10D_REGISTER_GLOO 1
#endif
#endif

#if C10D_HAVE_NCCL && defined(__has_include)
#if __has_include("backends/nccl/register.h")
#include "backends/nccl/register.h"
#define C10D_REGISTER_NCCL 1
#endif
#endif

#if defined(__has_include)
#if __has_include("backends/verbs/register.h")
#include "backends/verbs/register.h"
#define C10D_REGISTER_VERBS 1
#endif
#endif

namespace c10d {

namespace {

struct Entry {
  BackendInfo info;
  BackendFactory factory;
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Entry> entries;  // guarded by mu
};

Registry& rawRegistry() {
  static Registry* registry = new Registry();  // never destroyed: usable from static destructors
  return *registry;
}

// Set while this thread registers the built-ins, so their registerBackend() calls do not try to
// register the built-ins again (which would deadlock on the once_flag).
thread_local bool registeringBuiltins = false;

void registerBuiltins() {
#ifdef C10D_REGISTER_GLOO
  registerGlooBackend();
#endif
#ifdef C10D_REGISTER_VERBS
  registerVerbsBackend();
#endif
#ifdef C10D_REGISTER_NCCL
  registerNcclBackend();
#endif
}

Registry& registry() {
  static std::once_flag once;
  if (!registeringBuiltins) {
    std::call_once(once, [] {
      registeringBuiltins = true;
      try {
        registerBuiltins();
      } catch (...) {
        registeringBuiltins = false;
        throw;
      }
      registeringBuiltins = false;
    });
  }
  return rawRegistry();
}

bool isAvailable(const BackendInfo& info, std::string* reason) {
  if (!info.available) return true;
  try {
    return info.available(reason);
  } catch (const std::exception& e) {
    if (reason != nullptr) *reason = e.what();
    return false;
  }
}

std::string namesLocked(const Registry& r) {
  std::vector<const Entry*> sorted;
  for (const auto& kv : r.entries) sorted.push_back(&kv.second);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->info.priority > b->info.priority;
  });
  std::string s;
  for (const Entry* e : sorted) s += (s.empty() ? "" : ", ") + e->info.name;
  return s.empty() ? std::string("none") : s;
}

}  // namespace

void registerBackend(BackendInfo info, BackendFactory factory) {
  C10D_CHECK_ARG(!info.name.empty(), "registerBackend: empty backend name");
  C10D_CHECK_ARG(info.name != "auto", "registerBackend: 'auto' is reserved");
  C10D_CHECK_ARG(factory != nullptr, "registerBackend: no factory for backend ", info.name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string name = info.name;
  r.entries[name] = Entry{std::move(info), std::move(factory)};
}

bool isBackendRegistered(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.entries.count(name) != 0;
}

std::vector<std::string> registeredBackends() {
  Registry& r = registry();
  std::vector<std::pair<int, std::string>> v;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& kv : r.entries) v.emplace_back(kv.second.info.priority, kv.first);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> names;
  for (auto& p : v) names.push_back(std::move(p.second));
  return names;
}

BackendInfo backendInfo(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.entries.find(name);
  if (it == r.entries.end()) {
    C10D_THROW(InvalidArgument, "unknown backend '", name, "' (registered: ", namesLocked(r), ")");
  }
  return it->second.info;
}

std::string defaultBackend() {
  std::string why;
  for (const std::string& name : registeredBackends()) {
    BackendInfo info;
    try {
      info = backendInfo(name);
    } catch (const InvalidArgument&) {
      continue;  // unregistered meanwhile
    }
    std::string reason;
    if (isAvailable(info, &reason)) return name;
    why += detail::str("; ", name, ": ", reason.empty() ? "unavailable" : reason);
  }
  C10D_THROW(
      Error, "no process-group backend is available here (registered: ",
      [] {
        Registry& r = registry();
        std::lock_guard<std::mutex> lock(r.mu);
        return namesLocked(r);
      }(),
      why, ")");
}

std::shared_ptr<ProcessGroup> createProcessGroup(const std::string& name,
                                                 std::shared_ptr<Store> store, int rank, int size,
                                                 const ProcessGroup::Options& options) {
  const std::string resolved = (name.empty() || name == "auto") ? defaultBackend() : name;
  Entry entry;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.entries.find(resolved);
    if (it == r.entries.end()) {
      C10D_THROW(InvalidArgument, "unknown backend '", resolved, "' (registered: ", namesLocked(r),
                 ")");
    }
    entry = it->second;
  }
  std::string reason;
  if (!isAvailable(entry.info, &reason)) {
    C10D_THROW(Error, "backend ", resolved, " is not available here: ",
               reason.empty() ? std::string("no reason given") : reason);
  }
  C10D_CHECK_ARG(size >= 1 && rank >= 0 && rank < size, "createProcessGroup(", resolved, "): rank ",
                 rank, " is out of range [0, ", size, ")");
  auto pg = entry.factory(std::move(store), rank, size, options);
  C10D_CHECK(pg != nullptr, "the factory of backend ", resolved, " returned no group");
  return pg;
}

}  // namespace c10d
