// C ABI: the collectives. Each converts its arguments (checked, see c_api_internal.h), calls the
// ProcessGroup method of the same name (which validates the rest before communicating) and hands
// back the Work.
#include "c10d/base/abi.h"
#include "c10d/c_api_internal.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace capi {
namespace {

struct OpOptions {
  Milliseconds timeout = kUnsetTimeout;
  double premulScale = 1.0;
  std::shared_ptr<const std::vector<uint64_t>> parts;  // null: one tensor
  bool given = false;  // the caller passed options (PREMUL_SUM needs its factor from them)
};

OpOptions readOpOptions(const c10d_op_options_t* opts, const char* fn) {
  OpOptions out;
  if (opts == nullptr) return out;
  c10d_op_options_t defaults;
  c10d_op_options_init(&defaults);
  const c10d_op_options_t o =
      readStruct(opts, defaults, offsetof(c10d_op_options_t, timeout_ms), fn, "opts");
  out.timeout = toTimeout(o.timeout_ms, kUnsetTimeout, fn, "opts->timeout_ms");
  out.premulScale = o.premul_scale;
  C10D_CHECK_ARG(o.parts != nullptr || o.num_parts == 0, fn,
                 ": opts->parts is NULL but num_parts is ", o.num_parts);
  if (o.num_parts > 0) {
    out.parts = std::make_shared<const std::vector<uint64_t>>(o.parts, o.parts + o.num_parts);
  }
  out.given = true;
  return out;
}

// `op` by reference: a C caller may pass any int, which is read as an integer (rawEnum).
ReduceOp toReduceOp(const c10d_reduce_op_t& op, const OpOptions& o, const char* fn) {
  const ReduceOp::Kind kind = toReduceKind(rawEnum(op), fn);
  if (kind != ReduceOp::PREMUL_SUM) return ReduceOp(kind);
  C10D_CHECK_ARG(o.given, fn,
                 ": C10D_REDUCE_PREMUL_SUM needs its factor in opts->premul_scale, but opts is "
                 "NULL");
  return ReduceOp::premulSum(o.premulScale);
}

std::vector<size_t> toSplits(const uint64_t* splits, size_t n, const char* fn, const char* what) {
  C10D_CHECK_ARG(splits != nullptr || n == 0, fn, ": ", what, " is NULL but its count is ", n);
  return std::vector<size_t>(splits, splits + n);
}

// The shape of every collective: clear *out, check pg and out, issue, wrap the work.
template <typename Issue>
c10d_status_t issue(const char* fn, c10d_pg_t* pg, c10d_work_t** out, Issue&& body) {
  if (out != nullptr) *out = nullptr;
  return guard([&] {
    notNull(out, fn, "out");
    ProcessGroup& g = groupOf(pg, fn);
    *out = newWorkHandle(body(g));
  });
}

}  // namespace
}  // namespace capi
C10D_NAMESPACE_END
}  // namespace c10d

using namespace c10d;  // NOLINT: this file only forwards to the C++ API
using capi::issue;
using capi::readOpOptions;
using capi::toReduceOp;
using capi::toTensor;
using capi::toTensors;

extern "C" {

c10d_status_t c10d_broadcast(c10d_pg_t* pg, const c10d_tensor_t* tensor, int root,
                             const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_broadcast";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    BroadcastOptions o;
    o.rootRank = root;
    const auto given = readOpOptions(opts, fn);
    o.timeout = given.timeout;
    o.parts = given.parts;
    return g.broadcast(toTensor(tensor, fn, "tensor"), o);
  });
}

c10d_status_t c10d_allreduce(c10d_pg_t* pg, const c10d_tensor_t* tensor, c10d_reduce_op_t op,
                             const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_allreduce";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    AllreduceOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.timeout = oo.timeout;
    return g.allreduce(toTensor(tensor, fn, "tensor"), o);
  });
}

c10d_status_t c10d_allreduce_into(c10d_pg_t* pg, const c10d_tensor_t* output,
                                  const c10d_tensor_t* input, c10d_reduce_op_t op,
                                  const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_allreduce_into";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    AllreduceOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.timeout = oo.timeout;
    return g.allreduceInto(toTensor(output, fn, "output"), toTensor(input, fn, "input"), o);
  });
}

c10d_status_t c10d_allreduce_coalesced(c10d_pg_t* pg, const c10d_tensor_t* tensors,
                                       size_t num_tensors, c10d_reduce_op_t op,
                                       const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_allreduce_coalesced";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    AllreduceCoalescedOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.timeout = oo.timeout;
    return g.allreduceCoalesced(toTensors(tensors, num_tensors, fn, "tensors"), o);
  });
}

c10d_status_t c10d_reduce(c10d_pg_t* pg, const c10d_tensor_t* tensor, int root, c10d_reduce_op_t op,
                          const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_reduce";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    ReduceOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.rootRank = root;
    o.timeout = oo.timeout;
    return g.reduce(toTensor(tensor, fn, "tensor"), o);
  });
}

c10d_status_t c10d_reduce_into(c10d_pg_t* pg, const c10d_tensor_t* output,
                               const c10d_tensor_t* input, int root, c10d_reduce_op_t op,
                               const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_reduce_into";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    ReduceOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.rootRank = root;
    o.timeout = oo.timeout;
    // The output is the root's only: elsewhere it may be NULL (and is not read).
    const Tensor dst =
        output != nullptr && root == g.rank() ? toTensor(output, fn, "output") : Tensor{};
    return g.reduceInto(dst, toTensor(input, fn, "input"), o);
  });
}

c10d_status_t c10d_allgather(c10d_pg_t* pg, const c10d_tensor_t* outputs, size_t num_outputs,
                             const c10d_tensor_t* input, const c10d_op_options_t* opts,
                             c10d_work_t** out) {
  static const char* fn = "c10d_allgather";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    AllgatherOptions o;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.allgather(toTensors(outputs, num_outputs, fn, "outputs"), toTensor(input, fn, "input"),
                       o);
  });
}

c10d_status_t c10d_allgather_into_tensor(c10d_pg_t* pg, const c10d_tensor_t* output,
                                         const c10d_tensor_t* input, const c10d_op_options_t* opts,
                                         c10d_work_t** out) {
  static const char* fn = "c10d_allgather_into_tensor";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    AllgatherOptions o;
    const auto given = readOpOptions(opts, fn);
    o.timeout = given.timeout;
    o.parts = given.parts;
    return g.allgatherIntoTensor(toTensor(output, fn, "output"), toTensor(input, fn, "input"), o);
  });
}

c10d_status_t c10d_gather(c10d_pg_t* pg, const c10d_tensor_t* outputs, size_t num_outputs,
                          const c10d_tensor_t* input, int root, const c10d_op_options_t* opts,
                          c10d_work_t** out) {
  static const char* fn = "c10d_gather";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    GatherOptions o;
    o.rootRank = root;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.gather(toTensors(outputs, num_outputs, fn, "outputs"), toTensor(input, fn, "input"),
                    o);
  });
}

c10d_status_t c10d_scatter(c10d_pg_t* pg, const c10d_tensor_t* output, const c10d_tensor_t* inputs,
                           size_t num_inputs, int root, const c10d_op_options_t* opts,
                           c10d_work_t** out) {
  static const char* fn = "c10d_scatter";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    ScatterOptions o;
    o.rootRank = root;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.scatter(toTensor(output, fn, "output"), toTensors(inputs, num_inputs, fn, "inputs"),
                     o);
  });
}

c10d_status_t c10d_reduce_scatter(c10d_pg_t* pg, const c10d_tensor_t* output,
                                  const c10d_tensor_t* inputs, size_t num_inputs,
                                  c10d_reduce_op_t op, const c10d_op_options_t* opts,
                                  c10d_work_t** out) {
  static const char* fn = "c10d_reduce_scatter";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    ReduceScatterOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.timeout = oo.timeout;
    return g.reduceScatter(toTensor(output, fn, "output"),
                           toTensors(inputs, num_inputs, fn, "inputs"), o);
  });
}

c10d_status_t c10d_reduce_scatter_tensor(c10d_pg_t* pg, const c10d_tensor_t* output,
                                         const c10d_tensor_t* input, c10d_reduce_op_t op,
                                         const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_reduce_scatter_tensor";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    const capi::OpOptions oo = readOpOptions(opts, fn);
    ReduceScatterOptions o;
    o.reduceOp = toReduceOp(op, oo, fn);
    o.timeout = oo.timeout;
    return g.reduceScatterTensor(toTensor(output, fn, "output"), toTensor(input, fn, "input"), o);
  });
}

c10d_status_t c10d_alltoall(c10d_pg_t* pg, const c10d_tensor_t* outputs, size_t num_outputs,
                            const c10d_tensor_t* inputs, size_t num_inputs,
                            const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_alltoall";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    AllToAllOptions o;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.alltoall(toTensors(outputs, num_outputs, fn, "outputs"),
                      toTensors(inputs, num_inputs, fn, "inputs"), o);
  });
}

c10d_status_t c10d_alltoall_single(c10d_pg_t* pg, const c10d_tensor_t* output,
                                   const c10d_tensor_t* input, const uint64_t* output_splits,
                                   size_t num_output_splits, const uint64_t* input_splits,
                                   size_t num_input_splits, const c10d_op_options_t* opts,
                                   c10d_work_t** out) {
  static const char* fn = "c10d_alltoall_single";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    AllToAllOptions o;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.alltoallSingle(toTensor(output, fn, "output"), toTensor(input, fn, "input"),
                            capi::toSplits(output_splits, num_output_splits, fn, "output_splits"),
                            capi::toSplits(input_splits, num_input_splits, fn, "input_splits"), o);
  });
}

c10d_status_t c10d_barrier(c10d_pg_t* pg, const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_barrier";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    BarrierOptions o;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.barrier(o);
  });
}

c10d_status_t c10d_send(c10d_pg_t* pg, const c10d_tensor_t* tensor, int dst, int tag,
                        const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_send";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    SendRecvOptions o;
    o.tag = tag;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.send(toTensor(tensor, fn, "tensor"), dst, o);
  });
}

c10d_status_t c10d_recv(c10d_pg_t* pg, const c10d_tensor_t* tensor, int src, int tag,
                        const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_recv";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    SendRecvOptions o;
    o.tag = tag;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.recv(toTensor(tensor, fn, "tensor"), src, o);
  });
}

c10d_status_t c10d_recv_any_source(c10d_pg_t* pg, const c10d_tensor_t* tensor, int tag,
                                   const c10d_op_options_t* opts, c10d_work_t** out) {
  static const char* fn = "c10d_recv_any_source";
  return issue(fn, pg, out, [&](ProcessGroup& g) {
    SendRecvOptions o;
    o.tag = tag;
    o.timeout = readOpOptions(opts, fn).timeout;
    return g.recvAnySource(toTensor(tensor, fn, "tensor"), o);
  });
}

c10d_status_t c10d_monitored_barrier(c10d_pg_t* pg, int64_t timeout_ms, int wait_all_ranks) {
  static const char* fn = "c10d_monitored_barrier";
  return capi::guard([&] {
    ProcessGroup& g = capi::groupOf(pg, fn);
    const Milliseconds t = capi::toTimeout(timeout_ms, kUnsetTimeout, fn, "timeout_ms");
    g.monitoredBarrier(t, wait_all_ranks != 0);
  });
}

c10d_status_t c10d_start_coalescing(c10d_pg_t* pg) {
  static const char* fn = "c10d_start_coalescing";
  return capi::guard([&] { capi::groupOf(pg, fn).startCoalescing(); });
}

c10d_status_t c10d_end_coalescing(c10d_pg_t* pg, c10d_work_t** out) {
  static const char* fn = "c10d_end_coalescing";
  return issue(fn, pg, out, [&](ProcessGroup& g) { return g.endCoalescing(); });
}

}  // extern "C"
