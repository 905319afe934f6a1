#include "capi.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace c10d_torch {
namespace {

CApi load() {
  CApi api;
#define C10D_TORCH_CAPI_BIND(name) api.name = &::name;
  C10D_TORCH_CAPI_FUNCTIONS(C10D_TORCH_CAPI_BIND)
#undef C10D_TORCH_CAPI_BIND
  Dl_info info{};
  api.path = dladdr(reinterpret_cast<void*>(api.c10d_version), &info) != 0 && info.dli_fname
                 ? info.dli_fname
                 : "libc10d.so." + std::to_string(C10D_ABI_VERSION);
  // The loader found libc10d.so.<ABI> by SONAME; a library of another ABI would not be named so,
  // but one copied over it could: say so rather than call it with the wrong layouts.
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
