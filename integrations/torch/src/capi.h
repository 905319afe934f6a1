// The C ABI of libc10d as the torch plugin reaches it: a table of function pointers filled by
// dlopen(RTLD_LOCAL) + dlsym.
//
// Why not link libc10d: libtorch and libc10d both define C++ symbols in namespace c10d (c10d::Work,
// c10d::ProcessGroup, c10d::Store, their vtables and typeinfo). Had the plugin libc10d as a
// DT_NEEDED dependency, libc10d's exported c10d:: names would sit in the plugin's lookup scope next
// to libtorch's, and a plugin reference meant for torch's c10d::Work could bind to ours. Loaded
// with RTLD_LOCAL, libc10d's symbols are visible only through dlsym, and the plugin names nothing
// of ours but the c10d_* C functions; libc10d itself is linked -Bsymbolic, so its own references
// never bind to libtorch's either (cmake/C10dExports.cmake).
//
// Which library: $C10D_TORCH_LIBRARY if set, else the libc10d this plugin was built with (its
// absolute path, compiled in; the default, C10D_TORCH_BUILD_TREE_LIBC10D=ON), else (built with it
// OFF, as the python3-c10d-torch package is) "libc10d.so.<C10D_ABI_VERSION>" through the loader's
// search.
// Its c10d_abi_version() must equal the C10D_ABI_VERSION of the header compiled here.
//
// Threads: capi() loads once (std::call_once); the table is immutable afterwards and may be read
// from any thread. Errors: capi() throws std::runtime_error naming the path tried and dlerror().
#ifndef C10D_INTEGRATIONS_TORCH_CAPI_H_
#define C10D_INTEGRATIONS_TORCH_CAPI_H_

#include <string>

#include "c10d/c_api.h"

namespace c10d_torch {

#define C10D_TORCH_CAPI_FUNCTIONS(X) \
  X(c10d_last_error)                 \
  X(c10d_status_name)                \
  X(c10d_abi_version)                \
  X(c10d_version)                    \
  X(c10d_store_from_callbacks)       \
  X(c10d_store_release)              \
  X(c10d_pg_create_from_store)       \
  X(c10d_pg_destroy)                 \
  X(c10d_pg_name)                    \
  X(c10d_pg_backend_name)            \
  X(c10d_broadcast)                  \
  X(c10d_allreduce)                  \
  X(c10d_allreduce_coalesced)        \
  X(c10d_reduce)                     \
  X(c10d_allgather)                  \
  X(c10d_allgather_into_tensor)      \
  X(c10d_gather)                     \
  X(c10d_scatter)                    \
  X(c10d_reduce_scatter)             \
  X(c10d_reduce_scatter_tensor)      \
  X(c10d_alltoall)                   \
  X(c10d_alltoall_single)            \
  X(c10d_barrier)                    \
  X(c10d_send)                       \
  X(c10d_recv)                       \
  X(c10d_recv_any_source)            \
  X(c10d_monitored_barrier)          \
  X(c10d_work_wait)                  \
  X(c10d_work_test)                  \
  X(c10d_work_source_rank)           \
  X(c10d_work_on_complete)           \
  X(c10d_work_abort)                 \
  X(c10d_work_release)

struct CApi {
#define C10D_TORCH_CAPI_MEMBER(name) decltype(&::name) name = nullptr;
  C10D_TORCH_CAPI_FUNCTIONS(C10D_TORCH_CAPI_MEMBER)
#undef C10D_TORCH_CAPI_MEMBER
  std::string path;  // the file dlopen'ed
};

// The loaded table (loads libc10d on the first call).
const CApi& capi();

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_CAPI_H_
