#include "c10d/backends/verbs/transport/ibverbs/ibv_wrap.h"

#include <dlfcn.h>

#include <cerrno>
#include <mutex>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

template <typename F>
bool load(void* h, const char* name, F* out, std::string* why) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  if (*out == nullptr && why->empty()) *why = std::string("libibverbs.so.1 lacks ") + name;
  return *out != nullptr;
}

}  // namespace

const IbvApi* ibvApi(std::string* why) {
  static IbvApi api;
  static std::string error;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    // Never dlclose'd: the function pointers live as long as the process.
    void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      error = std::string("libibverbs.so.1 not found (") + (e ? e : "?") +
              "); install rdma-core / libibverbs1";
      return;
    }
    bool all = true;
    all &= load(h, "ibv_get_device_list", &api.getDeviceList, &error);
    all &= load(h, "ibv_free_device_list", &api.freeDeviceList, &error);
    all &= load(h, "ibv_get_device_name", &api.getDeviceName, &error);
    all &= load(h, "ibv_open_device", &api.openDevice, &error);
    all &= load(h, "ibv_close_device", &api.closeDevice, &error);
    all &= load(h, "ibv_query_port", &api.queryPort, &error);
    all &= load(h, "ibv_query_gid", &api.queryGid, &error);
    all &= load(h, "ibv_alloc_pd", &api.allocPd, &error);
    all &= load(h, "ibv_dealloc_pd", &api.deallocPd, &error);
    all &= load(h, "ibv_reg_mr", &api.regMr, &error);
    all &= load(h, "ibv_dereg_mr", &api.deregMr, &error);
    all &= load(h, "ibv_create_comp_channel", &api.createCompChannel, &error);
    all &= load(h, "ibv_destroy_comp_channel", &api.destroyCompChannel, &error);
    all &= load(h, "ibv_create_cq", &api.createCq, &error);
    all &= load(h, "ibv_destroy_cq", &api.destroyCq, &error);
    all &= load(h, "ibv_get_cq_event", &api.getCqEvent, &error);
    all &= load(h, "ibv_ack_cq_events", &api.ackCqEvents, &error);
    all &= load(h, "ibv_create_qp", &api.createQp, &error);
    all &= load(h, "ibv_destroy_qp", &api.destroyQp, &error);
    all &= load(h, "ibv_modify_qp", &api.modifyQp, &error);
    all &= load(h, "ibv_wc_status_str", &api.wcStatusStr, &error);
    ok = all;
  });
  if (!ok) {
    if (why) *why = error;
    return nullptr;
  }
  return &api;
}

bool ibvListDevices(std::string* why, std::string* names) {
  std::string w;
  const IbvApi* api = ibvApi(&w);
  if (api == nullptr) {
    if (why) *why = w;
    return false;
  }
  int n = 0;
  errno = 0;
  ibv_device** list = api->getDeviceList(&n);
  if (list == nullptr) {
    int err = errno;
    if (why) {
      *why = err == ENOSYS
                 ? "no RDMA device: ibv_get_device_list failed with ENOSYS (this kernel or "
                   "container has no RDMA support)"
                 : "no RDMA device: ibv_get_device_list failed: " + detail::errnoString(err);
    }
    return false;
  }
  if (n == 0) {
    api->freeDeviceList(list);
    if (why) *why = "no RDMA device: ibv_get_device_list returned an empty list";
    return false;
  }
  if (names) {
    names->clear();
    for (int i = 0; i < n; ++i) {
      if (i) *names += ",";
      *names += api->getDeviceName(list[i]);
    }
  }
  api->freeDeviceList(list);
  return true;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
