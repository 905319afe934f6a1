#include "c10d/store/store_registry.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/base/error.h"
#include "c10d/base/thread_annotations.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

Mutex& registryMutex() {
  static Mutex mu;
  return mu;
}

// The factories; registry() is the only way to them, and requires registryMutex().
std::map<std::string, StoreFactory>& registry() C10D_REQUIRES(registryMutex()) {
  static std::map<std::string, StoreFactory> factories;
  return factories;
}

bool validScheme(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

// The directory libc10d was loaded from, with a trailing '/' ("" if unknown).
std::string ownDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&findStoreScheme), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

bool registered(const std::string& scheme) {
  MutexLock lock(registryMutex());
  return registry().count(scheme) != 0;
}

}  // namespace

void registerStoreScheme(const std::string& scheme, StoreFactory factory) {
  C10D_CHECK_ARG(validScheme(scheme), "registerStoreScheme: bad scheme name '", scheme, "'");
  MutexLock lock(registryMutex());
  registry()[scheme] = std::move(factory);
}

bool findStoreScheme(const std::string& scheme, std::string* reason) {
  if (!validScheme(scheme)) {
    if (reason) *reason = "not a store scheme name (lower-case letters and digits)";
    return false;
  }
  if (registered(scheme)) return true;
  // Loading runs the library's static initializer, which registers the scheme. Never unloaded.
  const std::string name = "libc10d_store_" + scheme + ".so." + std::to_string(C10D_SOVERSION);
  std::vector<std::string> paths;
  const std::string dir = ownDirectory();
  if (!dir.empty()) paths.push_back(dir + name);
  paths.push_back(name);
  std::string errors;
  for (const std::string& path : paths) {
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr && registered(scheme)) return true;
    const char* err = dlerror();
    errors += errors.empty() ? "" : "; ";
    errors += err != nullptr ? err : (path + " loaded but did not register '" + scheme + "'");
  }
  if (reason) *reason = "no store library for it (" + errors + ")";
  return false;
}

std::shared_ptr<Store> createStoreFromUrl(const std::string& url, Milliseconds timeout) {
  const size_t sep = url.find("://");
  C10D_CHECK_ARG(sep != std::string::npos, "store URL '", url, "': missing SCHEME://");
  const std::string scheme = url.substr(0, sep);
  std::string reason;
  if (!findStoreScheme(scheme, &reason)) {
    C10D_THROW(InvalidArgument, "store URL '", url, "': unknown scheme '", scheme, "': ", reason);
  }
  StoreFactory factory;
  {
    MutexLock lock(registryMutex());
    factory = registry().at(scheme);
  }
  return factory(url, timeout);
}

C10D_NAMESPACE_END
}  // namespace c10d
