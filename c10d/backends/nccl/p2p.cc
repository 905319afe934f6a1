// Point-to-point ops of ProcessGroupNccl and the collectives built from them (alltoall, gather,
// scatter): grouped ncclSend/ncclRecv inside one ncclGroupStart/End (launch()). Empty chunks are
// skipped on both sides (the sizes agree across ranks). A rank's own chunk is a device-to-device
// copy on the op stream. NCCL matches sends and receives by peer, in issue order: tags are not
// used, and a receive from any source is refused.
#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/launch.h"
#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/backends/nccl/process_group_nccl.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

void sendTo(Launch& l, const Tensor& t, int peer) {
  if (t.numel == 0) return;
  C10D_NCCL_CHECK(ncclSend(t.data, t.numel, toNcclDataType(t.dtype), peer, l.comm, l.stream),
                  l.comm, l.what(), ": send of ", t.numel, " x ", toString(t.dtype), " to rank ",
                  peer);
}

void recvFrom(Launch& l, const Tensor& t, int peer) {
  if (t.numel == 0) return;
  C10D_NCCL_CHECK(ncclRecv(t.data, t.numel, toNcclDataType(t.dtype), peer, l.comm, l.stream),
                  l.comm, l.what(), ": recv of ", t.numel, " x ", toString(t.dtype), " from rank ",
                  peer);
}

size_t totalNumel(const std::vector<Tensor>& ts) {
  size_t n = 0;
  for (const Tensor& t : ts) n += t.numel;
  return n;
}

std::vector<Tensor> join(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::shared_ptr<Work> ProcessGroupNccl::doAlltoall(const std::vector<Tensor>& outputs,
                                                   const std::vector<Tensor>& inputs,
                                                   const AllToAllOptions& opts, uint64_t seq) {
  if (totalNumel(outputs) + totalNumel(inputs) == 0) {
    return makeCompletedWork(OpType::kAlltoall, seq, name());
  }
  const int me = rank();
  return launch(OpType::kAlltoall, seq, opts.timeout, inputs[0].device.index, join(outputs, inputs),
                [=](Launch& l) {
                  for (int p = 0; p < l.size; ++p) {
                    if (p == me) {
                      C10D_CHECK_EQ(outputs[p].numel, inputs[p].numel, l.what(),
                                    ": this rank's own chunk");
                      l.copyNow(outputs[p].data, inputs[p].data, inputs[p].nbytes());
                      continue;
                    }
                    sendTo(l, inputs[p], p);
                    recvFrom(l, outputs[p], p);
                  }
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doAlltoallSingle(Tensor output, Tensor input,
                                                         const std::vector<size_t>& outputSplits,
                                                         const std::vector<size_t>& inputSplits,
                                                         const AllToAllOptions& opts,
                                                         uint64_t seq) {
  if (output.numel + input.numel == 0) {
    return makeCompletedWork(OpType::kAlltoallSingle, seq, name());
  }
  const int me = rank();
  return launch(OpType::kAlltoallSingle, seq, opts.timeout, input.device.index, {output, input},
                [=](Launch& l) {
                  size_t inOff = 0, outOff = 0;
                  for (int p = 0; p < l.size; ++p) {
                    const Tensor in = input.slice(inOff, inputSplits[p]);
                    const Tensor out = output.slice(outOff, outputSplits[p]);
                    inOff += inputSplits[p];
                    outOff += outputSplits[p];
                    if (p == me) {
                      C10D_CHECK_EQ(in.numel, out.numel, l.what(), ": this rank's own chunk");
                      l.copyNow(out.data, in.data, in.nbytes());
                      continue;
                    }
                    sendTo(l, in, p);
                    recvFrom(l, out, p);
                  }
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doGather(const std::vector<Tensor>& outputs, Tensor input,
                                                 const GatherOptions& opts, uint64_t seq) {
  if (input.numel == 0) return makeCompletedWork(OpType::kGather, seq, name());
  const int root = opts.rootRank;
  const int me = rank();
  return launch(OpType::kGather, seq, opts.timeout, input.device.index, join(outputs, {input}),
                [=](Launch& l) {
                  if (me != root) {
                    sendTo(l, input, root);
                    return;
                  }
                  for (int p = 0; p < l.size; ++p) {
                    if (p == me) {
                      l.copyNow(outputs[p].data, input.data, input.nbytes());
                    } else {
                      recvFrom(l, outputs[p], p);
                    }
                  }
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                  const ScatterOptions& opts, uint64_t seq) {
  if (output.numel == 0) return makeCompletedWork(OpType::kScatter, seq, name());
  const int root = opts.rootRank;
  const int me = rank();
  return launch(OpType::kScatter, seq, opts.timeout, output.device.index, join({output}, inputs),
                [=](Launch& l) {
                  if (me != root) {
                    recvFrom(l, output, root);
                    return;
                  }
                  for (int p = 0; p < l.size; ++p) {
                    if (p == me) {
                      l.copyNow(output.data, inputs[p].data, output.nbytes());
                    } else {
                      sendTo(l, inputs[p], p);
                    }
                  }
                });
}

std::shared_ptr<Work> ProcessGroupNccl::doSend(Tensor t, int dstRank, const SendRecvOptions& opts,
                                               uint64_t seq) {
  if (t.numel == 0) return makeCompletedWork(OpType::kSend, seq, name());
  return launch(OpType::kSend, seq, opts.timeout, t.device.index, {t},
                [=](Launch& l) { sendTo(l, t, dstRank); });
}

std::shared_ptr<Work> ProcessGroupNccl::doRecv(Tensor t, int srcRank, const SendRecvOptions& opts,
                                               uint64_t seq) {
  C10D_CHECK_ARG(srcRank >= 0, "nccl: recv #", seq, " in group ", name(), ": rank ", rank(),
                 " asked to receive from any source, which NCCL cannot do (it matches sends and "
                 "receives by peer); name the source rank");
  if (t.numel == 0) return makeCompletedWork(OpType::kRecv, seq, name());
  return launch(OpType::kRecv, seq, opts.timeout, t.device.index, {t},
                [=](Launch& l) { recvFrom(l, t, srcRank); });
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
