// ibv_wrap: libibverbs loaded at run time with dlopen("libibverbs.so.1"), as NCCL does, so that
// libc10d has no hard dependency on it: a host without rdma-core simply has no ibverbs transport.
//
// Every ibv_* call the transport makes goes through IbvApi and the C10D_IBV_* macros, which name
// the failed call and its errno. The data-path calls (ibv_post_send, ibv_post_recv, ibv_poll_cq,
// ibv_req_notify_cq) are static inlines in verbs.h dispatching through the context's ops table,
// so they need no symbol. Thread-safe after the first load (std::call_once).
#pragma once

#include <infiniband/verbs.h>

#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

struct IbvApi {
  ibv_device** (*getDeviceList)(int*) = nullptr;
  void (*freeDeviceList)(ibv_device**) = nullptr;
  const char* (*getDeviceName)(ibv_device*) = nullptr;
  ibv_context* (*openDevice)(ibv_device*) = nullptr;
  int (*closeDevice)(ibv_context*) = nullptr;
  int (*queryPort)(ibv_context*, uint8_t, ibv_port_attr*) = nullptr;
  int (*queryGid)(ibv_context*, uint8_t, int, ibv_gid*) = nullptr;
  ibv_pd* (*allocPd)(ibv_context*) = nullptr;
  int (*deallocPd)(ibv_pd*) = nullptr;
  ibv_mr* (*regMr)(ibv_pd*, void*, size_t, int) = nullptr;
  int (*deregMr)(ibv_mr*) = nullptr;
  ibv_comp_channel* (*createCompChannel)(ibv_context*) = nullptr;
  int (*destroyCompChannel)(ibv_comp_channel*) = nullptr;
  ibv_cq* (*createCq)(ibv_context*, int, void*, ibv_comp_channel*, int) = nullptr;
  int (*destroyCq)(ibv_cq*) = nullptr;
  int (*getCqEvent)(ibv_comp_channel*, ibv_cq**, void**) = nullptr;
  void (*ackCqEvents)(ibv_cq*, unsigned int) = nullptr;
  ibv_qp* (*createQp)(ibv_pd*, ibv_qp_init_attr*) = nullptr;
  int (*destroyQp)(ibv_qp*) = nullptr;
  int (*modifyQp)(ibv_qp*, ibv_qp_attr*, int) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status) = nullptr;
};

// The loaded API, or null with `why` filled ("libibverbs.so.1 not found: <dlerror>").
const IbvApi* ibvApi(std::string* why);

// Lists devices. Returns false with `why` when there are none, saying why in words: no library,
// ibv_get_device_list failing with ENOSYS (no RDMA support in this kernel / container), or an
// empty list. On success `names` holds the device names.
bool ibvListDevices(std::string* why, std::string* names = nullptr);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d

// Throws Error naming the call and errno when `expr` (an int-returning ibv call) is non-zero.
#define C10D_IBV_CHECK(expr, ...)                                                            \
  do {                                                                                       \
    int c10d_rc_ = (expr);                                                                   \
    if (c10d_rc_ != 0) {                                                                     \
      int c10d_err_ = c10d_rc_ > 0 ? c10d_rc_ : errno;                                       \
      C10D_THROW(::c10d::Error,                                                              \
                 "ibverbs: " #expr " failed: ", ::c10d::detail::errnoString(c10d_err_), " ", \
                 ##__VA_ARGS__);                                                             \
    }                                                                                        \
  } while (0)

// Throws Error naming the call and errno when `expr` (a pointer-returning ibv call) is null.
#define C10D_IBV_PTR(var, expr, ...)                                                       \
  var = (expr);                                                                            \
  if (var == nullptr) {                                                                    \
    int c10d_err_ = errno;                                                                 \
    C10D_THROW(::c10d::Error,                                                              \
               "ibverbs: " #expr " failed: ", ::c10d::detail::errnoString(c10d_err_), " ", \
               ##__VA_ARGS__);                                                             \
  }
