// Python.h first, as Python asks: only the destructor uses it (to drop the GIL).
#include <Python.h>

#include "process_group.h"

#include <c10/util/accumulate.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>

#include "staging.h"
#include "torch_store.h"
#include "work.h"

namespace c10d_torch {
namespace {

// The one tensor of a single-tensor op (torch passes a list of one per rank on CPU).
const at::Tensor& single(const std::string& ctx, const std::vector<at::Tensor>& ts,
                         const char* what) {
  TORCH_CHECK(ts.size() == 1, ctx, ": takes exactly one ", what, " tensor per rank, got ",
              ts.size());
  return ts[0];
}

void checkSameShape(const std::string& ctx, const at::Tensor& t, const std::string& what,
                    const at::Tensor& ref, const char* refName) {
  TORCH_CHECK(t.defined() && ref.defined() && t.numel() == ref.numel() &&
                  t.scalar_type() == ref.scalar_type(),
              ctx, ": ", what, " (", t.scalar_type(), ", ", t.numel(), " elements) does not match ",
              refName, " (", ref.scalar_type(), ", ", ref.numel(), " elements)");
}

void checkListSize(const std::string& ctx, size_t got, int size, const char* what) {
  TORCH_CHECK(got == static_cast<size_t>(size), ctx, ": ", what, " has ", got,
              " tensors, the group has ", size, " ranks");
}

c10d_op_options_t opOptions(std::chrono::milliseconds timeout) {
  c10d_op_options_t o;
  c10d_op_options_init(&o);
  if (timeout.count() > 0) {  // kUnsetTimeout (-1): the group's
    o.timeout_ms = timeout.count();
  }
  return o;
}

// torch's reduce op -> libc10d's; PREMUL_SUM's factor goes into `o`.
c10d_reduce_op_t toC10dOp(const std::string& ctx, const ::c10d::ReduceOp& op,
                          c10d_op_options_t* o) {
  switch (op.op_) {
    case ::c10d::ReduceOp::SUM:
      return C10D_REDUCE_SUM;
    case ::c10d::ReduceOp::AVG:
      return C10D_REDUCE_AVG;
    case ::c10d::ReduceOp::PRODUCT:
      return C10D_REDUCE_PRODUCT;
    case ::c10d::ReduceOp::MIN:
      return C10D_REDUCE_MIN;
    case ::c10d::ReduceOp::MAX:
      return C10D_REDUCE_MAX;
    case ::c10d::ReduceOp::BAND:
      return C10D_REDUCE_BAND;
    case ::c10d::ReduceOp::BOR:
      return C10D_REDUCE_BOR;
    case ::c10d::ReduceOp::BXOR:
      return C10D_REDUCE_BXOR;
    case ::c10d::ReduceOp::PREMUL_SUM: {
      const auto* factor =
          dynamic_cast<const ::c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(factor != nullptr, ctx, ": PREMUL_SUM without its factor");
      const std::vector<at::Tensor> tensors = premulFactorTensors(*factor);
      if (tensors.empty()) {
        o->premul_scale = factor->double_factor;
      } else {
        TORCH_CHECK(tensors.size() == 1 && tensors[0].numel() == 1, ctx,
                    ": PREMUL_SUM takes one scalar factor, got ", tensors.size(),
                    " factor tensors");
        o->premul_scale = tensors[0].item<double>();
      }
      return C10D_REDUCE_PREMUL_SUM;
    }
    default:
      TORCH_CHECK(false, ctx, ": unknown reduce op ", static_cast<int>(op.op_));
  }
}

// Elements per row of dim 0 (alltoall_base counts its splits in rows).
uint64_t rowNumel(const at::Tensor& t) {
  if (t.dim() == 0) {
    return 1;
  }
  return static_cast<uint64_t>(c10::multiply_integers(t.sizes().slice(1)));
}

// torch's splits (rows; empty = equal) -> element counts, with torch's checks.
std::vector<uint64_t> elementSplits(const std::string& ctx, const at::Tensor& t,
                                    const std::vector<int64_t>& splits, int size,
                                    const char* what) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  std::vector<uint64_t> out(static_cast<size_t>(size));
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, ctx, ": ", what, " tensor's dim 0 (", rows,
                ") is not divisible by the group size ", size, " (no split sizes given)");
    std::fill(out.begin(), out.end(), static_cast<uint64_t>(rows / size) * rowNumel(t));
    return out;
  }
  checkListSize(ctx, splits.size(), size, what);
  int64_t sum = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    TORCH_CHECK(splits[i] >= 0, ctx, ": ", what, " split sizes[", i, "] is negative (", splits[i],
                ")");
    sum += splits[i];
    out[i] = static_cast<uint64_t>(splits[i]) * rowNumel(t);
  }
  TORCH_CHECK(sum == rows, ctx, ": ", what, " split sizes add up to ", sum,
              " rows, the tensor has ", rows);
  return out;
}

std::atomic<int> groupCounter{0};

}  // namespace

ProcessGroupC10d::ProcessGroupC10d(const c10::intrusive_ptr<::c10d::Store>& store, int rank,
                                   int size, std::chrono::milliseconds timeout,
                                   const std::string& engine,
                                   const std::vector<std::pair<std::string, std::string>>& config)
    : TorchBackendBase(rank, size), engine_(engine) {
  const CApi& api = capi();
  // Groups are created in the same order on every rank (torch requires it), so the counter names
  // a group the same everywhere.
  const std::string groupName = "torch" + std::to_string(groupCounter++);
  std::vector<const char*> keys, values;
  for (const auto& kv : config) {
    keys.push_back(kv.first.c_str());
    values.push_back(kv.second.c_str());
  }
  c10d_pg_options_t options;
  c10d_pg_options_init(&options);
  options.timeout_ms = timeout.count() > 0 ? timeout.count() : C10D_TIMEOUT_DEFAULT;
  options.group_name = groupName.c_str();
  options.num_config = config.size();
  options.config_keys = keys.data();
  options.config_values = values.data();
  c10d_store_t* cstore = wrapTorchStore(store, timeout);
  const c10d_status_t status =
      api.c10d_pg_create_from_store(cstore, engine.c_str(), rank, size, &options, &pg_);
  const std::string why = status == C10D_STATUS_OK ? "" : api.c10d_last_error();
  api.c10d_store_release(cstore);  // the group holds its own reference
  TORCH_CHECK(status == C10D_STATUS_OK,
              failureText(c10::str("c10d_torch: creating the c10d group (engine '", engine,
                                   "') on rank ", rank, " of ", size, " failed"),
                          status, why.c_str()));
  const char* name = nullptr;
  api.c10d_pg_name(pg_, &name);
  name_ = name ? name : engine;
  init();
}

ProcessGroupC10d::~ProcessGroupC10d() {
  // Destroying joins the engine's threads, and one of them may be completing an op: dropping the
  // last reference to a tensor whose Python object it then owns takes the GIL. Python drops groups
  // with the GIL held (destroy_process_group, a local going out of scope), so release it here, or
  // the two threads wait for each other forever.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* state = PyEval_SaveThread();
    capi().c10d_pg_destroy(pg_);
    PyEval_RestoreThread(state);
  } else {
    capi().c10d_pg_destroy(pg_);
  }
}

std::string ProcessGroupC10d::context(const char* op) const {
  return c10::str("c10d_torch: ", op, " on rank ", rank_, " of ", name_, " (size ", size_, ")");
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::finish(const char* op, ::c10d::OpType type,
                                                          c10d_status_t status, c10d_work_t* work,
                                                          std::vector<at::Tensor> outputs,
                                                          std::vector<at::Tensor> inputs,
                                                          Staging staging) {
  const std::string ctx = context(op);
  TORCH_CHECK(status == C10D_STATUS_OK, failureText(ctx, status, capi().c10d_last_error()));
  return issued(type, c10::make_intrusive<WorkC10d>(work, rank_, type, ctx, std::move(outputs),
                                                    std::move(inputs), std::move(staging)));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::issued(::c10d::OpType type,
                                                          c10::intrusive_ptr<::c10d::Work> w) {
  if (type != ::c10d::OpType::SEND && type != ::c10d::OpType::RECV &&
      type != ::c10d::OpType::RECVANYSOURCE) {
    ++seq_;  // collectives only: ranks issue different point-to-point ops
  }
  if (coalescing_) {
    coalesced_.push_back(w);
  }
  return w;
}

void ProcessGroupC10d::runStep(const std::string& ctx, c10d_status_t status, c10d_work_t* work) {
  const CApi& api = capi();
  TORCH_CHECK(status == C10D_STATUS_OK, failureText(ctx, status, api.c10d_last_error()));
  status = api.c10d_work_wait(work, C10D_TIMEOUT_DEFAULT);  // the op's own timeout
  const std::string why = status == C10D_STATUS_OK ? "" : api.c10d_last_error();
  api.c10d_work_release(work);
  TORCH_CHECK(status == C10D_STATUS_OK, failureText(ctx, status, why.c_str()));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::broadcast(std::vector<at::Tensor>& tensors,
                                                             const ::c10d::BroadcastOptions& opts) {
  const std::string ctx = context("broadcast");
  const at::Tensor& t = single(ctx, tensors, "");
  TORCH_CHECK(opts.rootTensor == 0, ctx, ": rootTensor must be 0, got ", opts.rootTensor);
  Staging staging(ctx);
  const c10d_tensor_t view = staging.inOut(t, "tensors[0]");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_broadcast(pg_, &view, static_cast<int>(opts.rootRank), &o, &work);
  return finish("broadcast", ::c10d::OpType::BROADCAST, status, work, tensors, {},
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allreduce(std::vector<at::Tensor>& tensors,
                                                             const ::c10d::AllreduceOptions& opts) {
  const std::string ctx = context("allreduce");
  const at::Tensor& t = single(ctx, tensors, "");
  if (t.defined() && t.layout() == c10::kSparse) {
    return allreduceSparse(tensors[0], opts);
  }
  Staging staging(ctx);
  const c10d_tensor_t view = staging.inOut(t, "tensors[0]");
  c10d_op_options_t o = opOptions(opts.timeout);
  const c10d_reduce_op_t op = toC10dOp(ctx, opts.reduceOp, &o);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_allreduce(pg_, &view, op, &o, &work);
  return finish("allreduce", ::c10d::OpType::ALLREDUCE, status, work, tensors, {},
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  const std::string ctx = context("allreduce_coalesced");
  Staging staging(ctx);
  std::vector<c10d_tensor_t> views;
  for (size_t i = 0; i < tensors.size(); ++i) {
    views.push_back(staging.inOut(tensors[i], c10::str("tensors[", i, "]")));
  }
  c10d_op_options_t o = opOptions(opts.timeout);
  const c10d_reduce_op_t op = toC10dOp(ctx, opts.reduceOp, &o);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_allreduce_coalesced(pg_, views.data(), views.size(), op, &o, &work);
  return finish("allreduce_coalesced", ::c10d::OpType::ALLREDUCE_COALESCED, status, work, tensors,
                {}, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::reduce(std::vector<at::Tensor>& tensors,
                                                          const ::c10d::ReduceOptions& opts) {
  const std::string ctx = context("reduce");
  const at::Tensor& t = single(ctx, tensors, "");
  TORCH_CHECK(opts.rootTensor == 0, ctx, ": rootTensor must be 0, got ", opts.rootTensor);
  Staging staging(ctx);
  const c10d_tensor_t view = staging.inOut(t, "tensors[0]");
  c10d_op_options_t o = opOptions(opts.timeout);
  const c10d_reduce_op_t op = toC10dOp(ctx, opts.reduceOp, &o);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_reduce(pg_, &view, static_cast<int>(opts.rootRank), op, &o, &work);
  return finish("reduce", ::c10d::OpType::REDUCE, status, work, tensors, {}, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::AllgatherOptions& opts) {
  const std::string ctx = context("allgather");
  const at::Tensor& in = single(ctx, inputs, "input");
  TORCH_CHECK(outputs.size() == 1, ctx, ": takes one list of output tensors per rank, got ",
              outputs.size());
  checkListSize(ctx, outputs[0].size(), size_, "output_tensors[0]");
  for (size_t i = 0; i < outputs[0].size(); ++i) {
    checkSameShape(ctx, outputs[0][i], c10::str("output_tensors[0][", i, "]"), in, "the input");
  }
  Staging staging(ctx);
  const c10d_tensor_t inView = staging.in(in, "input_tensors[0]");
  const std::vector<c10d_tensor_t> outViews = staging.outs(outputs[0], "output_tensors[0]");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_allgather(pg_, outViews.data(), outViews.size(), &inView, &o, &work);
  return finish("allgather", ::c10d::OpType::ALLGATHER, status, work, outputs[0], inputs,
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::_allgather_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::AllgatherOptions& opts) {
  const std::string ctx = context("_allgather_base");
  Staging staging(ctx);
  const c10d_tensor_t inView = staging.in(input, "input");
  const c10d_tensor_t outView = staging.out(output, "output");
  TORCH_CHECK(
      output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * size_, ctx,
      ": output (", output.scalar_type(), ", ", output.numel(),
      " elements) must have the input's dtype (", input.scalar_type(),
      ") and group size x input's ", input.numel(), " elements");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_allgather_into_tensor(pg_, &outView, &inView, &o, &work);
  return finish("_allgather_base", ::c10d::OpType::_ALLGATHER_BASE, status, work, {output}, {input},
                std::move(staging));
}

// torch's deprecated list form of _allgather_base: rank r's inputs land in outputLists[r], one
// output per input. Runs as one allgather of the inputs packed end to end (as torch's gloo does):
// the inputs are copied into one flat buffer, and on completion each rank's slice of the gathered
// buffer is copied out into its outputs. Every rank must pass inputs of the same sizes.
c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const ::c10d::AllgatherOptions& opts) {
  const std::string ctx = context("allgather_coalesced");
  TORCH_CHECK(!inputs.empty(), ctx, ": input_tensor_list is empty");
  checkListSize(ctx, outputLists.size(), size_, "output_tensor_lists");
  int64_t total = 0;
  for (size_t j = 0; j < inputs.size(); ++j) {
    checkTensor(ctx, inputs[j], c10::str("input_tensor_list[", j, "]"));
    TORCH_CHECK(inputs[j].scalar_type() == inputs[0].scalar_type(), ctx, ": input_tensor_list[", j,
                "] has dtype ", inputs[j].scalar_type(), ", input_tensor_list[0] has ",
                inputs[0].scalar_type());
    total += inputs[j].numel();
  }
  Staging staging(ctx);
  std::vector<at::Tensor> outputs;  // the Future's value: every output, rank by rank
  for (size_t r = 0; r < outputLists.size(); ++r) {
    TORCH_CHECK(outputLists[r].size() == inputs.size(), ctx, ": output_tensor_lists[", r, "] has ",
                outputLists[r].size(), " tensors, input_tensor_list has ", inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j) {
      const std::string what = c10::str("output_tensor_lists[", r, "][", j, "]");
      checkSameShape(ctx, outputLists[r][j], what, inputs[j],
                     c10::str("input_tensor_list[", j, "]").c_str());
      staging.checkOutput(outputLists[r][j], what);
      outputs.push_back(outputLists[r][j]);
    }
  }
  const at::TensorOptions flat = inputs[0].options().memory_format(at::MemoryFormat::Contiguous);
  at::Tensor packedIn = at::empty({total}, flat);
  at::Tensor packedOut = at::empty({total * size_}, flat);
  int64_t offset = 0;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const int64_t n = inputs[j].numel();
    packedIn.narrow(0, offset, n).view(inputs[j].sizes()).copy_(inputs[j].detach());
    for (size_t r = 0; r < outputLists.size(); ++r) {
      staging.copyBackLater(outputLists[r][j], packedOut.narrow(0, total * r + offset, n));
    }
    offset += n;
  }
  const c10d_tensor_t inView = staging.in(packedIn, "the packed inputs");
  const c10d_tensor_t outView = staging.out(packedOut, "the packed outputs");
  staging.keep(packedIn);
  staging.keep(packedOut);
  // The inputs' sizes ride with the op: ranks that pass different sizes fail on every rank
  // instead of gathering misaligned slices.
  std::vector<uint64_t> parts;
  for (const at::Tensor& in : inputs) parts.push_back(static_cast<uint64_t>(in.numel()));
  c10d_op_options_t o = opOptions(opts.timeout);
  o.parts = parts.data();
  o.num_parts = parts.size();
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_allgather_into_tensor(pg_, &outView, &inView, &o, &work);
  return finish("allgather_coalesced", ::c10d::OpType::ALLGATHER_COALESCED, status, work,
                std::move(outputs), inputs, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::GatherOptions& opts) {
  const std::string ctx = context("gather");
  const at::Tensor& in = single(ctx, inputs, "input");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, ctx, ": root rank ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  std::vector<at::Tensor> outs;
  if (rank_ == opts.rootRank) {
    TORCH_CHECK(outputs.size() == 1, ctx, ": the root takes one list of output tensors, got ",
                outputs.size());
    checkListSize(ctx, outputs[0].size(), size_, "output_tensors[0]");
    for (size_t i = 0; i < outputs[0].size(); ++i) {
      checkSameShape(ctx, outputs[0][i], c10::str("output_tensors[0][", i, "]"), in, "the input");
    }
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), ctx,
                ": only the root (rank ", opts.rootRank, ") takes output tensors");
  }
  Staging staging(ctx);
  const c10d_tensor_t inView = staging.in(in, "input_tensors[0]");
  const std::vector<c10d_tensor_t> outViews = staging.outs(outs, "output_tensors[0]");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_gather(pg_, outViews.data(), outViews.size(), &inView,
                                                  static_cast<int>(opts.rootRank), &o, &work);
  return finish("gather", ::c10d::OpType::GATHER, status, work, outs, inputs, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ::c10d::ScatterOptions& opts) {
  const std::string ctx = context("scatter");
  const at::Tensor& out = single(ctx, outputs, "output");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, ctx, ": root rank ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  std::vector<at::Tensor> ins;
  if (rank_ == opts.rootRank) {
    TORCH_CHECK(inputs.size() == 1, ctx, ": the root takes one list of input tensors, got ",
                inputs.size());
    checkListSize(ctx, inputs[0].size(), size_, "input_tensors[0]");
    for (size_t i = 0; i < inputs[0].size(); ++i) {
      checkSameShape(ctx, inputs[0][i], c10::str("input_tensors[0][", i, "]"), out, "the output");
    }
    ins = inputs[0];
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), ctx,
                ": only the root (rank ", opts.rootRank, ") takes input tensors");
  }
  Staging staging(ctx);
  const c10d_tensor_t outView = staging.out(out, "output_tensors[0]");
  const std::vector<c10d_tensor_t> inViews = staging.ins(ins, "input_tensors[0]");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_scatter(pg_, &outView, inViews.data(), inViews.size(),
                                                   static_cast<int>(opts.rootRank), &o, &work);
  return finish("scatter", ::c10d::OpType::SCATTER, status, work, outputs, ins, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  const std::string ctx = context("reduce_scatter");
  const at::Tensor& out = single(ctx, outputs, "output");
  TORCH_CHECK(inputs.size() == 1, ctx, ": takes one list of input tensors per rank, got ",
              inputs.size());
  checkListSize(ctx, inputs[0].size(), size_, "input_tensors[0]");
  for (size_t i = 0; i < inputs[0].size(); ++i) {
    checkSameShape(ctx, inputs[0][i], c10::str("input_tensors[0][", i, "]"), out, "the output");
  }
  Staging staging(ctx);
  const c10d_tensor_t outView = staging.out(out, "output_tensors[0]");
  const std::vector<c10d_tensor_t> inViews = staging.ins(inputs[0], "input_tensors[0]");
  c10d_op_options_t o = opOptions(opts.timeout);
  const c10d_reduce_op_t op = toC10dOp(ctx, opts.reduceOp, &o);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_reduce_scatter(pg_, &outView, inViews.data(), inViews.size(), op, &o, &work);
  return finish("reduce_scatter", ::c10d::OpType::REDUCE_SCATTER, status, work, outputs, inputs[0],
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  const std::string ctx = context("_reduce_scatter_base");
  Staging staging(ctx);
  const c10d_tensor_t outView = staging.out(output, "output");
  const c10d_tensor_t inView = staging.in(input, "input");
  TORCH_CHECK(
      output.scalar_type() == input.scalar_type() && input.numel() == output.numel() * size_, ctx,
      ": input (", input.scalar_type(), ", ", input.numel(),
      " elements) must have the output's dtype (", output.scalar_type(),
      ") and group size x output's ", output.numel(), " elements");
  c10d_op_options_t o = opOptions(opts.timeout);
  const c10d_reduce_op_t op = toC10dOp(ctx, opts.reduceOp, &o);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_reduce_scatter_tensor(pg_, &outView, &inView, op, &o, &work);
  return finish("_reduce_scatter_base", ::c10d::OpType::_REDUCE_SCATTER_BASE, status, work,
                {output}, {input}, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const ::c10d::AllToAllOptions& opts) {
  const std::string ctx = context("alltoall_base");
  Staging staging(ctx);
  const c10d_tensor_t outView = staging.out(output, "output");
  const c10d_tensor_t inView = staging.in(input, "input");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), ctx, ": output has dtype ",
              output.scalar_type(), ", input has ", input.scalar_type());
  const std::vector<uint64_t> outCounts = elementSplits(ctx, output, outputSplits, size_, "output");
  const std::vector<uint64_t> inCounts = elementSplits(ctx, input, inputSplits, size_, "input");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status =
      capi().c10d_alltoall_single(pg_, &outView, &inView, outCounts.data(), outCounts.size(),
                                  inCounts.data(), inCounts.size(), &o, &work);
  return finish("alltoall_base", ::c10d::OpType::ALLTOALL_BASE, status, work, {output}, {input},
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const ::c10d::AllToAllOptions& opts) {
  const std::string ctx = context("alltoall");
  checkListSize(ctx, outputs.size(), size_, "output_tensor_list");
  checkListSize(ctx, inputs.size(), size_, "input_tensor_list");
  Staging staging(ctx);
  const std::vector<c10d_tensor_t> outViews = staging.outs(outputs, "output_tensor_list");
  const std::vector<c10d_tensor_t> inViews = staging.ins(inputs, "input_tensor_list");
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_alltoall(pg_, outViews.data(), outViews.size(),
                                                    inViews.data(), inViews.size(), &o, &work);
  return finish("alltoall", ::c10d::OpType::ALLTOALL, status, work, outputs, inputs,
                std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::barrier(const ::c10d::BarrierOptions& opts) {
  const c10d_op_options_t o = opOptions(opts.timeout);
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_barrier(pg_, &o, &work);
  return finish("barrier", ::c10d::OpType::BARRIER, status, work, {}, {},
                Staging(context("barrier")));
}

void ProcessGroupC10d::monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) {
  const CApi& api = capi();
  // kUnsetTimeout (-1): the group's; 0 is a real timeout (rank 0 fails at once if a peer is late).
  const int64_t timeout = opts.timeout.count() >= 0 ? opts.timeout.count() : C10D_TIMEOUT_DEFAULT;
  const c10d_status_t status = api.c10d_monitored_barrier(pg_, timeout, waitAllRanks ? 1 : 0);
  TORCH_CHECK(status == C10D_STATUS_OK,
              failureText(context("monitored_barrier"), status, api.c10d_last_error()));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::send(std::vector<at::Tensor>& tensors, int dst,
                                                        int tag) {
  const std::string ctx = context("send");
  Staging staging(ctx);
  const c10d_tensor_t view = staging.in(single(ctx, tensors, ""), "tensors[0]");
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_send(pg_, &view, dst, tag, nullptr, &work);
  return finish("send", ::c10d::OpType::SEND, status, work, {}, tensors, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  const std::string ctx = context("recv");
  Staging staging(ctx);
  const c10d_tensor_t view = staging.out(single(ctx, tensors, ""), "tensors[0]");
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_recv(pg_, &view, src, tag, nullptr, &work);
  return finish("recv", ::c10d::OpType::RECV, status, work, tensors, {}, std::move(staging));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  const std::string ctx = context("recv_anysource");
  Staging staging(ctx);
  const c10d_tensor_t view = staging.out(single(ctx, tensors, ""), "tensors[0]");
  c10d_work_t* work = nullptr;
  const c10d_status_t status = capi().c10d_recv_any_source(pg_, &view, tag, nullptr, &work);
  return finish("recv_anysource", ::c10d::OpType::RECVANYSOURCE, status, work, tensors, {},
                std::move(staging));
}

// torch's gloo algorithm, so results agree with it bit for bit: every rank's coalesced (indices,
// values) are allgathered (padded to the largest nnz), added up as sparse tensors in rank order,
// and coalesced.
c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allreduceSparse(
    at::Tensor& tensor, const ::c10d::AllreduceOptions& opts) {
  const std::string ctx = context("allreduce");
  TORCH_CHECK(opts.reduceOp.op_ == ::c10d::ReduceOp::SUM, ctx,
              ": a sparse tensor reduces with SUM only (as on torch's gloo), got op ",
              static_cast<int>(opts.reduceOp.op_));
  TORCH_CHECK(tensor.is_cpu(), ctx, ": tensors[0] is on ", tensor.device(),
              "; the c10d backend takes CPU tensors");
  checkTensor(ctx, tensor._values(), "tensors[0]'s values");
  const at::Tensor input = tensor.coalesce();
  const at::Tensor indices = input._indices().contiguous();  // [sparse dims, nnz], int64
  const at::Tensor values = input._values().contiguous();    // [nnz, dense dims...]
  const int64_t nnz = input._nnz();
  const c10d_op_options_t o = opOptions(opts.timeout);
  const CApi& api = capi();
  // One allgather_into_tensor step, run to completion.
  auto allgather = [&](const at::Tensor& out, const at::Tensor& in, const char* what) {
    const std::string stepCtx = c10::str(ctx, " (allgathering the ", what, ")");
    Staging staging(stepCtx);
    const c10d_tensor_t inView = staging.in(in, what);
    const c10d_tensor_t outView = staging.out(out, what);
    c10d_work_t* work = nullptr;
    const c10d_status_t status = api.c10d_allgather_into_tensor(pg_, &outView, &inView, &o, &work);
    runStep(stepCtx, status, work);
  };
  const at::Tensor counts = at::empty({size_}, at::kLong);
  allgather(counts, at::full({1}, nnz, at::kLong), "nnz");
  const int64_t maxNnz = counts.max().item<int64_t>();

  const int64_t sparseDims = indices.size(0);
  at::Tensor paddedIndices = at::zeros({sparseDims, maxNnz}, at::kLong);
  paddedIndices.narrow(1, 0, nnz).copy_(indices);
  const at::Tensor allIndices = at::empty({size_, sparseDims, maxNnz}, at::kLong);
  allgather(allIndices, paddedIndices, "indices");

  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = maxNnz;
  at::Tensor paddedValues = at::zeros(valueShape, values.options());
  paddedValues.narrow(0, 0, nnz).copy_(values);
  valueShape[0] = maxNnz * size_;
  const at::Tensor allValues = at::empty(valueShape, values.options());
  allgather(allValues, paddedValues, "values");

  at::Tensor sum;
  for (int r = 0; r < size_; ++r) {
    const int64_t n = counts[r].item<int64_t>();
    at::Tensor part =
        at::sparse_coo_tensor(allIndices[r].narrow(1, 0, n), allValues.narrow(0, r * maxNnz, n),
                              input.sizes(), input.options());
    sum = r == 0 ? part : sum + part;
  }
  sum = sum.coalesce();
  tensor.copy_(sum);
  return issued(::c10d::OpType::ALLREDUCE,
                c10::make_intrusive<CompositeWork>(rank_, ::c10d::OpType::ALLREDUCE,
                                                   std::vector<c10::intrusive_ptr<::c10d::Work>>{},
                                                   std::vector<at::Tensor>{tensor}));
}

#if C10D_TORCH_BACKEND_API
void ProcessGroupC10d::startCoalescing() {
  TORCH_CHECK(!coalescing_, context("start_coalescing"),
              ": a coalescing block is already open on this group");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::endCoalescing() {
  TORCH_CHECK(coalescing_, context("end_coalescing"), ": no coalescing block is open");
  coalescing_ = false;
  return c10::make_intrusive<CompositeWork>(rank_, ::c10d::OpType::COALESCED,
                                            std::exchange(coalesced_, {}));
}

namespace {

// The coalesced forms of allgather_into_tensor and reduce_scatter_tensor: one op per (output,
// input) pair, one Work over all of them.
template <typename RunPair>
c10::intrusive_ptr<::c10d::Work> runPairs(const std::string& ctx, int rank,
                                          std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs, RunPair runPair) {
  TORCH_CHECK(outputs.size() == inputs.size(), ctx, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs");
  std::vector<c10::intrusive_ptr<::c10d::Work>> parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    parts.push_back(runPair(outputs[i], inputs[i]));
  }
  return c10::make_intrusive<CompositeWork>(rank, ::c10d::OpType::COALESCED, std::move(parts));
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::AllgatherOptions& opts) {
  return runPairs(context("allgather_into_tensor_coalesced"), rank_, outputs, inputs,
                  [&](at::Tensor& out, at::Tensor& in) { return _allgather_base(out, in, opts); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupC10d::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  return runPairs(
      context("reduce_scatter_tensor_coalesced"), rank_, outputs, inputs,
      [&](at::Tensor& out, at::Tensor& in) { return _reduce_scatter_base(out, in, opts); });
}
#endif

}  // namespace c10d_torch
