// The ibverbs transport: RC queue pairs per peer and channel, each direction a ring buffer in the
// receiver's registered memory that the sender fills with RDMA WRITE WITH IMMEDIATE (the
// immediate carries the byte count, the receive completion is the doorbell); the receiver returns
// ring space by RDMA-writing its consumed-bytes counter back into the sender's memory. Source
// buffers are registered through an MrCache (mr_cache.h), so data leaves the user's buffer
// without a copy. QP numbers, LIDs, GIDs, ring addresses and rkeys are exchanged through the
// Store (ib_addr.h). Device, port and GID index: C10D_IB_DEVICE, C10D_IB_PORT, C10D_IB_GID_INDEX.
//
// Waiting: completion queues are polled while spinning, then the transport sleeps on its
// completion channel (event-channel fallback) for at most the slice it was given.
// Every ibv_* call goes through ibv_wrap.h (dlopen'd libibverbs; named errors).
#pragma once

#include <memory>
#include <string>

#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace verbs {

// Whether an RDMA device usable by this transport is present; `reason` says why not (e.g. "no
// RDMA device: ibv_get_device_list failed with ENOSYS ...").
bool ibDeviceAvailable(const VerbsConfig& cfg, std::string* reason);

// Collective over the group. Throws Error with ibDeviceAvailable's reason when there is no device.
std::unique_ptr<Transport> makeIbTransport(Store& store, int rank, int size, const VerbsConfig& cfg,
                                           Milliseconds timeout);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
