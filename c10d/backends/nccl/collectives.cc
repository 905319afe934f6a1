// The collectives of ProcessGroupNccl: each is one body of NCCL calls handed to launch(), which
// orders it after the caller's stream, wraps it in ncclGroupStart/End and completes its Work on an
// event. Ops that move no data complete at once without touching NCCL (every rank agrees, as the
// counts of a collective must match).
#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/launch.h"
#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

// Whether tensors[i] directly follows tensors[i - 1] in memory for every i (one flat buffer).
bool adjacent(const std::vector<Tensor>& tensors) {
  for (size_t i = 1; i < tensors.size(); ++i) {
    const auto* prev = static_cast<const char*>(tensors[i - 1].data);
    if (static_cast<const char*>(tensors[i].data) != prev + tensors[i - 1].nbytes()) return false;
  }
  return true;
}

std::vector<Tensor> join(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs call(offset, n) over [0, count): once, or twice where a one-rank group's NCCL kernel
// would leave out the last elements (see oneRankHead in nccl_types.h).
template <typename Call>
void reduceInPieces(const Launch& l, size_t count, DataType dtype, const ReduceOp& op, Call call) {
  const size_t head = l.size == 1 && scalesOnOneRank(op.kind, dtype)
                          ? oneRankHead(count, elementSize(dtype))
                          : count;
  call(size_t{0}, head);
  if (head < count) call(head, count - head);
}

// `data` advanced by `offset` elements of `dtype`.
void* at(void* data, size_t offset, DataType dtype) {
  return static_cast<char*>(data) + offset * elementSize(dtype);
}
const void* at(const void* data, size_t offset, DataType dtype) {
  return static_cast<const char*>(data) + offset * elementSize(dtype);
}

}  // namespace

std::shared_ptr<Work> ProcessGroupNccl::doBroadcast(Tensor t, const BroadcastOptions& opts,
                                                    uint64_t seq) {
  if (t.numel == 0) return makeCompletedWork(OpType::kBroadcast, seq, name());
  const int root = opts.rootRank;
  return launch(OpType::kBroadcast, seq, opts.timeout, t.device.index, {t}, [=](Launch& l) {
    C10D_NCCL_CHECK(
        ncclBroadcast(t.data, t.data, t.numel, toNcclDataType(t.dtype), root, l.comm, l.stream),
        l.comm, l.what(), ", ", t.numel, " x ", toString(t.dtype), ", root ", root);
  });
}

std::shared_ptr<Work> ProcessGroupNccl::doAllreduce(Tensor t, const AllreduceOptions& opts,
                                                    uint64_t seq) {
  if (t.numel == 0) return makeCompletedWork(OpType::kAllreduce, seq, name());
  const ReduceOp op = opts.reduceOp;
  return launch(OpType::kAllreduce, seq, opts.timeout, t.device.index, {t}, [=](Launch& l) {
    reduceInPieces(l, t.numel, t.dtype, op, [&](size_t off, size_t n) {
      void* p = at(t.data, off, t.dtype);
      C10D_NCCL_CHECK(
          ncclAllReduce(p, p, n, toNcclDataType(t.dtype), l.redOp(op, t.dtype), l.comm, l.stream),
          l.comm, l.what(), ", ", t.numel, " x ", toString(t.dtype), ", op ", toString(op));
    });
  });
}

std::shared_ptr<Work> ProcessGroupNccl::doAllreduceInto(Tensor output, Tensor input,
                                                        const AllreduceOptions& opts,
                                                        uint64_t seq) {
  if (input.numel == 0) return makeCompletedWork(OpType::kAllreduce, seq, name());
  const ReduceOp op = opts.reduceOp;
  return launch(
      OpType::kAllreduce, seq, opts.timeout, input.device.index, {output, input}, [=](Launch& l) {
        reduceInPieces(l, input.numel, input.dtype, op, [&](size_t off, size_t n) {
          C10D_NCCL_CHECK(
              ncclAllReduce(at(input.data, off, input.dtype), at(output.data, off, input.dtype), n,
                            toNcclDataType(input.dtype), l.redOp(op, input.dtype), l.comm,
                            l.stream),
              l.comm, l.what(), ", ", input.numel, " x ", toString(input.dtype), ", op ",
              toString(op), ", out of place");
        });
      });
}

std::shared_ptr<Work> ProcessGroupNccl::doAllreduceCoalesced(const std::vector<Tensor>& tensors,
                                                             const AllreduceCoalescedOptions& opts,
                                                             uint64_t seq) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += t.numel;
  if (total == 0) return makeCompletedWork(OpType::kAllreduceCoalesced, seq, name());
  const ReduceOp op = opts.reduceOp;
  return launch(OpType::kAllreduceCoalesced, seq, opts.timeout, tensors[0].device.index, tensors,
                [=](Launch& l) {
                  for (size_t i = 0; i < tensors.size(); ++i) {
                    const Tensor& t = tensors[i];
                    if (t.numel == 0) continue;
                    reduceInPieces(l, t.numel, t.dtype, op, [&](size_t off, size_t n) {
                      void* p = at(t.data, off, t.dtype);
                      C10D_NCCL_CHECK(ncclAllReduce(p, p, n, toNcclDataType(t.dtype),
                                                    l.redOp(op, t.dtype), l.comm, l.stream),
                                      l.comm, l.what(), ", tensors[", i, "]: ", t.numel, " x ",
                                      toString(t.dtype));
                    });
                  }
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doReduce(Tensor t, const ReduceOptions& opts,
                                                 uint64_t seq) {
  if (t.numel == 0) return makeCompletedWork(OpType::kReduce, seq, name());
  const ReduceOp op = opts.reduceOp;
  const int root = opts.rootRank;
  return launch(OpType::kReduce, seq, opts.timeout, t.device.index, {t}, [=](Launch& l) {
    // In place on every rank: NCCL writes the result on the root only.
    reduceInPieces(l, t.numel, t.dtype, op, [&](size_t off, size_t n) {
      void* p = at(t.data, off, t.dtype);
      C10D_NCCL_CHECK(ncclReduce(p, p, n, toNcclDataType(t.dtype), l.redOp(op, t.dtype), root,
                                 l.comm, l.stream),
                      l.comm, l.what(), ", ", t.numel, " x ", toString(t.dtype), ", root ", root);
    });
  });
}

std::shared_ptr<Work> ProcessGroupNccl::doReduceInto(Tensor output, Tensor input,
                                                     const ReduceOptions& opts, uint64_t seq) {
  if (input.numel == 0) return makeCompletedWork(OpType::kReduce, seq, name());
  const ReduceOp op = opts.reduceOp;
  const int root = opts.rootRank;
  // Called on the root only (the core runs reduce() in place on the input elsewhere).
  return launch(
      OpType::kReduce, seq, opts.timeout, input.device.index, {output, input}, [=](Launch& l) {
        reduceInPieces(l, input.numel, input.dtype, op, [&](size_t off, size_t n) {
          C10D_NCCL_CHECK(
              ncclReduce(at(input.data, off, input.dtype), at(output.data, off, input.dtype), n,
                         toNcclDataType(input.dtype), l.redOp(op, input.dtype), root, l.comm,
                         l.stream),
              l.comm, l.what(), ", ", input.numel, " x ", toString(input.dtype), ", root ", root,
              ", out of place");
        });
      });
}

std::shared_ptr<Work> ProcessGroupNccl::doAllgatherIntoTensor(Tensor output, Tensor input,
                                                              const AllgatherOptions& opts,
                                                              uint64_t seq) {
  if (input.numel == 0) return makeCompletedWork(OpType::kAllgatherIntoTensor, seq, name());
  return launch(OpType::kAllgatherIntoTensor, seq, opts.timeout, input.device.index,
                {output, input}, [=](Launch& l) {
                  C10D_NCCL_CHECK(ncclAllGather(input.data, output.data, input.numel,
                                                toNcclDataType(input.dtype), l.comm, l.stream),
                                  l.comm, l.what(), ", ", input.numel, " x ", toString(input.dtype),
                                  " per rank");
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doAllgather(const std::vector<Tensor>& outputs,
                                                    Tensor input, const AllgatherOptions& opts,
                                                    uint64_t seq) {
  if (input.numel == 0) return makeCompletedWork(OpType::kAllgather, seq, name());
  const bool flat = adjacent(outputs);
  return launch(OpType::kAllgather, seq, opts.timeout, input.device.index, join(outputs, {input}),
                [=](Launch& l) {
                  const size_t bytes = input.nbytes();
                  // Outputs that form one flat buffer take NCCL's result directly; others go
                  // through a stream-ordered temporary and are copied out after the kernel.
                  void* dst = flat ? outputs[0].data : l.temp(bytes * outputs.size());
                  C10D_NCCL_CHECK(ncclAllGather(input.data, dst, input.numel,
                                                toNcclDataType(input.dtype), l.comm, l.stream),
                                  l.comm, l.what(), ", ", input.numel, " x ", toString(input.dtype),
                                  " per rank");
                  if (flat) return;
                  for (size_t i = 0; i < outputs.size(); ++i) {
                    l.copyAfter(outputs[i].data, static_cast<char*>(dst) + i * bytes, bytes);
                  }
                  l.deferFree(dst);
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doReduceScatterTensor(Tensor output, Tensor input,
                                                              const ReduceScatterOptions& opts,
                                                              uint64_t seq) {
  if (output.numel == 0) return makeCompletedWork(OpType::kReduceScatterTensor, seq, name());
  const ReduceOp op = opts.reduceOp;
  return launch(OpType::kReduceScatterTensor, seq, opts.timeout, output.device.index,
                {output, input}, [=](Launch& l) {
                  // One rank: the output is the whole input, so the pieces line up in both.
                  reduceInPieces(l, output.numel, output.dtype, op, [&](size_t off, size_t n) {
                    C10D_NCCL_CHECK(ncclReduceScatter(at(input.data, off, output.dtype),
                                                      at(output.data, off, output.dtype), n,
                                                      toNcclDataType(output.dtype),
                                                      l.redOp(op, output.dtype), l.comm, l.stream),
                                    l.comm, l.what(), ", ", output.numel, " x ",
                                    toString(output.dtype), " per rank");
                  });
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doReduceScatter(Tensor output,
                                                        const std::vector<Tensor>& inputs,
                                                        const ReduceScatterOptions& opts,
                                                        uint64_t seq) {
  if (output.numel == 0) return makeCompletedWork(OpType::kReduceScatter, seq, name());
  const ReduceOp op = opts.reduceOp;
  const bool flat = adjacent(inputs);
  return launch(OpType::kReduceScatter, seq, opts.timeout, output.device.index,
                join({output}, inputs), [=](Launch& l) {
                  const size_t bytes = output.nbytes();
                  const void* src = inputs[0].data;
                  void* tmp = nullptr;
                  if (!flat) {
                    // Copies into the temporary are queued now, so they run before the kernel.
                    tmp = l.temp(bytes * inputs.size());
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      l.copyNow(static_cast<char*>(tmp) + i * bytes, inputs[i].data, bytes);
                    }
                    src = tmp;
                  }
                  reduceInPieces(l, output.numel, output.dtype, op, [&](size_t off, size_t n) {
                    C10D_NCCL_CHECK(ncclReduceScatter(at(src, off, output.dtype),
                                                      at(output.data, off, output.dtype), n,
                                                      toNcclDataType(output.dtype),
                                                      l.redOp(op, output.dtype), l.comm, l.stream),
                                    l.comm, l.what(), ", ", output.numel, " x ",
                                    toString(output.dtype), " per rank");
                  });
                  if (tmp != nullptr) l.deferFree(tmp);
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doBarrier(const BarrierOptions& opts, uint64_t seq) {
  const int device = defaultDevice();
  return launch(OpType::kBarrier, seq, opts.timeout, device, {}, [](Launch& l) {
    // An allreduce of one element on the group's scratch buffer.
    C10D_NCCL_CHECK(ncclAllReduce(l.scratch, l.scratch, 1, ncclFloat32, ncclSum, l.comm, l.stream),
                    l.comm, l.what());
  });
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
