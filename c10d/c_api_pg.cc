// C ABI: process groups (creation, accessors, sub-groups, shutdown).
#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"
#include "c10d/c_api_internal.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace capi {
namespace {

c10d_pg_t* newGroupHandle(std::shared_ptr<ProcessGroup> pg) {
  auto handle = std::make_unique<c10d_pg>();
  handle->backendName = pg->backendName();
  handle->name = pg->name();
  handle->impl = std::move(pg);
  return handle.release();
}

InitOptions initOptions(const char* backend, int rank, int worldSize,
                        const c10d_pg_options_t* options, const char* fn) {
  const ProcessGroup::Options o = toGroupOptions(options, fn);
  InitOptions io;
  io.backend = backend != nullptr ? backend : "";
  io.rank = rank;
  io.worldSize = worldSize;
  io.timeout = o.timeout;
  io.groupName = o.groupName;
  io.config = o.config;
  return io;
}

// A sub-group's options: the parent's (named by the core) when `options` is NULL.
ProcessGroup::Options subgroupOptions(const ProcessGroup& parent, const c10d_pg_options_t* options,
                                      const char* fn) {
  if (options != nullptr) return toGroupOptions(options, fn);
  ProcessGroup::Options o = parent.options();
  o.groupName = "world";  // the core then names it "<parent>/group<id>" (or split...)
  return o;
}

}  // namespace
}  // namespace capi
C10D_NAMESPACE_END
}  // namespace c10d

using c10d::capi::groupOf;
using c10d::capi::guard;
using c10d::capi::notNull;

extern "C" {

c10d_status_t c10d_pg_init(const char* init_method, const char* backend, int rank, int world_size,
                           const c10d_pg_options_t* options, c10d_pg_t** out) {
  static const char* fn = "c10d_pg_init";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::InitOptions io = c10d::capi::initOptions(backend, rank, world_size, options, fn);
    C10D_CHECK_ARG(rank >= -1, fn, ": rank ", rank, " is negative (-1: from the URL or RANK)");
    C10D_CHECK_ARG(world_size == -1 || world_size >= 1, fn, ": world_size ", world_size,
                   " (must be >= 1, or -1: from the URL or WORLD_SIZE)");
    io.initMethod = init_method != nullptr ? init_method : "env://";
    *out = c10d::capi::newGroupHandle(c10d::init(io));
  });
}

c10d_status_t c10d_pg_create_from_store(c10d_store_t* store, const char* backend, int rank,
                                        int world_size, const c10d_pg_options_t* options,
                                        c10d_pg_t** out) {
  static const char* fn = "c10d_pg_create_from_store";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::InitOptions io = c10d::capi::initOptions(backend, rank, world_size, options, fn);
    c10d::capi::storeOf(store, fn);
    C10D_CHECK_ARG(world_size >= 1, fn, ": world_size ", world_size, " (must be >= 1)");
    C10D_CHECK_ARG(rank >= 0 && rank < world_size, fn, ": rank ", rank, " is out of range [0, ",
                   world_size, ")");
    io.store = store->impl;
    *out = c10d::capi::newGroupHandle(c10d::init(io));
  });
}

c10d_status_t c10d_pg_rank(const c10d_pg_t* pg, int* rank) {
  static const char* fn = "c10d_pg_rank";
  return guard([&] { *notNull(rank, fn, "rank") = groupOf(pg, fn).rank(); });
}

c10d_status_t c10d_pg_size(const c10d_pg_t* pg, int* size) {
  static const char* fn = "c10d_pg_size";
  return guard([&] { *notNull(size, fn, "size") = groupOf(pg, fn).size(); });
}

c10d_status_t c10d_pg_backend_name(const c10d_pg_t* pg, const char** name) {
  static const char* fn = "c10d_pg_backend_name";
  return guard([&] {
    groupOf(pg, fn);
    *notNull(name, fn, "name") = pg->backendName.c_str();
  });
}

c10d_status_t c10d_pg_name(const c10d_pg_t* pg, const char** name) {
  static const char* fn = "c10d_pg_name";
  return guard([&] {
    groupOf(pg, fn);
    *notNull(name, fn, "name") = pg->name.c_str();
  });
}

c10d_status_t c10d_pg_store(const c10d_pg_t* pg, c10d_store_t** out) {
  static const char* fn = "c10d_pg_store";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    const auto& store = groupOf(pg, fn).store();
    C10D_CHECK_ARG(store != nullptr, fn, ": group ", pg->name, " has no store");
    *out = new c10d_store{store};
  });
}

c10d_status_t c10d_pg_supports(const c10d_pg_t* pg, c10d_reduce_op_t op, c10d_dtype_t dtype,
                               c10d_device_type_t device_type, int* supported) {
  static const char* fn = "c10d_pg_supports";
  return guard([&] {
    c10d::ProcessGroup& g = groupOf(pg, fn);
    notNull(supported, fn, "supported");
    const auto kind = c10d::capi::toReduceKind(c10d::capi::rawEnum(op), fn);
    const auto type = c10d::capi::toDataType(c10d::capi::rawEnum(dtype), fn, "dtype");
    const auto dev = c10d::capi::toDeviceType(c10d::capi::rawEnum(device_type), fn, "device");
    *supported = g.supports(kind, type, c10d::Device{dev, 0}) ? 1 : 0;
  });
}

c10d_status_t c10d_pg_new_subgroup(c10d_pg_t* pg, const int* ranks, size_t num_ranks,
                                   const c10d_pg_options_t* options, c10d_pg_t** out) {
  static const char* fn = "c10d_pg_new_subgroup";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::ProcessGroup& g = groupOf(pg, fn);
    C10D_CHECK_ARG(ranks != nullptr || num_ranks == 0, fn, ": ranks is NULL but num_ranks is ",
                   num_ranks);
    const std::vector<int> members(ranks, ranks + num_ranks);
    auto sub = g.newGroup(members, c10d::capi::subgroupOptions(g, options, fn));
    if (sub) *out = c10d::capi::newGroupHandle(std::move(sub));
  });
}

c10d_status_t c10d_pg_split(c10d_pg_t* pg, int color, int key, const c10d_pg_options_t* options,
                            c10d_pg_t** out) {
  static const char* fn = "c10d_pg_split";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::ProcessGroup& g = groupOf(pg, fn);
    auto sub = g.split(color, key, c10d::capi::subgroupOptions(g, options, fn));
    if (sub) *out = c10d::capi::newGroupHandle(std::move(sub));
  });
}

c10d_status_t c10d_pg_shutdown(c10d_pg_t* pg) {
  static const char* fn = "c10d_pg_shutdown";
  return guard([&] { groupOf(pg, fn).shutdown(); });
}

c10d_status_t c10d_pg_abort(c10d_pg_t* pg, const char* reason) {
  static const char* fn = "c10d_pg_abort";
  return guard([&] { groupOf(pg, fn).abort(reason == nullptr ? "" : reason); });
}

c10d_status_t c10d_pg_revoke(c10d_pg_t* pg, const char* reason) {
  static const char* fn = "c10d_pg_revoke";
  return guard([&] { groupOf(pg, fn).revoke(reason == nullptr ? "" : reason); });
}

c10d_status_t c10d_pg_is_revoked(const c10d_pg_t* pg, int* revoked) {
  static const char* fn = "c10d_pg_is_revoked";
  return guard([&] { *notNull(revoked, fn, "revoked") = groupOf(pg, fn).revoked() ? 1 : 0; });
}

c10d_status_t c10d_pg_agree(c10d_pg_t* pg, uint64_t flags, int64_t timeout_ms,
                            uint64_t* agreed_flags, int* failed, size_t failed_capacity,
                            size_t* num_failed) {
  static const char* fn = "c10d_pg_agree";
  return guard([&] {
    c10d::ProcessGroup& g = groupOf(pg, fn);
    notNull(agreed_flags, fn, "agreed_flags");
    notNull(num_failed, fn, "num_failed");
    C10D_CHECK_ARG(failed != nullptr || failed_capacity == 0, fn,
                   ": failed is NULL but failed_capacity is ", failed_capacity);
    const auto r =
        g.agree(flags, c10d::capi::toTimeout(timeout_ms, c10d::kUnsetTimeout, fn, "timeout_ms"));
    *agreed_flags = r.flags;
    *num_failed = r.failed.size();
    for (size_t i = 0; i < r.failed.size() && i < failed_capacity; ++i) failed[i] = r.failed[i];
  });
}

c10d_status_t c10d_pg_shrink(c10d_pg_t* pg, int64_t timeout_ms, c10d_pg_t** out) {
  static const char* fn = "c10d_pg_shrink";
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    c10d::ProcessGroup& g = groupOf(pg, fn);
    auto small = g.shrink(c10d::capi::toTimeout(timeout_ms, c10d::kUnsetTimeout, fn, "timeout_ms"));
    *out = c10d::capi::newGroupHandle(std::move(small));
  });
}

void c10d_pg_destroy(c10d_pg_t* pg) {
  if (pg == nullptr) return;
  // shutdown() is documented not to throw in practice; a destroy must not fail either way.
  (void)c10d_pg_shutdown(pg);
  delete pg;
}

}  // extern "C"
