#include "capi.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace c10d_torch {
namespace {

std::string libraryPath() {
  if (const char* env = std::getenv("C10D_TORCH_LIBRARY"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef C10D_TORCH_DEFAULT_LIBRARY
  return C10D_TORCH_DEFAULT_LIBRARY;
#else
  return "libc10d.so." + std::to_string(C10D_ABI_VERSION);
#endif
}

CApi load() {
  CApi api;
  api.path = libraryPath();
  // RTLD_LOCAL: libc10d's c10d:: symbols stay out of every other library's lookup scope (capi.h).
  void* handle = dlopen(api.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw std::runtime_error("c10d_torch: cannot load libc10d from '" + api.path +
                             "' (set C10D_TORCH_LIBRARY to its path): " + (err ? err : "?"));
  }
  // The handle is never closed: works and groups of the library may outlive any owner here.
#define C10D_TORCH_CAPI_LOAD(name)                                                   \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));             \
  if (api.name == nullptr) {                                                         \
    throw std::runtime_error("c10d_torch: '" + api.path +                            \
                             "' does not export " #name                              \
                             " (a libc10d older than this plugin's c10d/c_api.h?)"); \
  }
  C10D_TORCH_CAPI_FUNCTIONS(C10D_TORCH_CAPI_LOAD)
#undef C10D_TORCH_CAPI_LOAD
  const uint32_t version = api.c10d_abi_version();
  if (version != C10D_ABI_VERSION) {
    throw std::runtime_error("c10d_torch: '" + api.path + "' has C ABI version " +
                             std::to_string(version) + ", this plugin was built for " +
                             std::to_string(C10D_ABI_VERSION));
  }
  return api;
}

}  // namespace

const CApi& capi() {
  static std::once_flag once;
  static CApi api;
  std::call_once(once, [] { api = load(); });  // a throw leaves `once` unset: the next call retries
  return api;
}

}  // namespace c10d_torch
