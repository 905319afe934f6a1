// The C ABI of libc10d as the torch plugin calls it: a table of the c10d_* functions, bound once.
//
// The plugin links libc10d (DT_NEEDED libc10d.so.<C10D_ABI_VERSION>, found through its RUNPATH or
// LD_LIBRARY_PATH; scripts/torch_asan.sh points the latter at a sanitized build). It calls only
// the c10d_* C functions: the C++ API's names are c10d::v1::..., never libtorch's c10d::...
// (c10d/base/abi.h), and libc10d binds its own references at link time (-Bsymbolic,
// cmake/C10dExports.cmake), so neither library can take over the other's symbols. capi() checks
// that the library's c10d_abi_version() is the one of the header compiled here.
//
// Threads: capi() binds once (std::call_once); the table is immutable afterwards and may be read
// from any thread. Errors: capi() throws std::runtime_error naming the library's path.
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
