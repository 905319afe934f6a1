// The public, non-virtual collectives of ProcessGroup: argument validation on this rank (before
// any communication), the op's description (OpDesc: counts, dtype, root, reduce op), beginOp()
// (broken check, sequence numbers), the timeout resolved, and the backend's do*() method, which
// sees the description as currentOp(); the Work it returns carries it (Work::desc()).
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

// What an argument is called in messages ("tensor", "outputs[3]"): made on every op, so it is
// built without allocating; only a failure formats it.
struct Name {
  Name(const char* base) : base(base) {}  // NOLINT(google-explicit-constructor): literals
  Name(const char* base, size_t index) : base(base), index(index), indexed(true) {}
  const char* base;
  size_t index = 0;
  bool indexed = false;
};

std::ostream& operator<<(std::ostream& os, const Name& n) {
  os << n.base;
  if (n.indexed) os << '[' << n.index << ']';
  return os;
}

// Validates the arguments of one op; every failure is an InvalidArgument prefixed with the op,
// the rank, the group and its size.
class Check {
 public:
  Check(const ProcessGroup& pg, OpType op) : pg_(pg), op_(op) {}

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw InvalidArgument(detail::str(toString(op_), ": rank ", pg_.rank(), " of group ",
                                      pg_.name(), " (size ", pg_.size(), "): ", args...));
  }

  void timeout(Milliseconds t) const {
    if (t != kUnsetTimeout && t < Milliseconds::zero()) {
      fail("timeout of ", t.count(), " ms (must be >= 0, or kUnsetTimeout for the group's)");
    }
  }

  void tensor(const Tensor& t, Name what) const {
    if (static_cast<int>(t.dtype) >= kNumDataTypes) {
      fail(what, " has an invalid dtype ", static_cast<int>(t.dtype));
    }
    if (t.data == nullptr && t.numel > 0) {
      fail(what, " has null data with numel ", t.numel);
    }
    if (!pg_.supportsDevice(t.device)) {
      fail(what, " is on device ", toString(t.device), ", which backend ", pg_.backendName(),
           " does not support");
    }
  }

  // `t` must have the dtype and device of `ref` (named `refWhat`).
  void like(const Tensor& t, Name what, const Tensor& ref, Name refWhat) const {
    if (t.dtype != ref.dtype) {
      fail(what, " has dtype ", toString(t.dtype), " but ", refWhat, " has dtype ",
           toString(ref.dtype));
    }
    if (t.device != ref.device) {
      fail(what, " is on device ", toString(t.device), " but ", refWhat, " is on device ",
           toString(ref.device));
    }
  }

  // allreduceInto / reduceInto's output: a tensor like the input, of its numel, and either the
  // same memory (in place) or disjoint from it.
  void outOfPlaceOutput(const Tensor& output, const Tensor& input) const {
    tensor(output, "output");
    like(output, "output", input, "input");
    numel(output, "output", input.numel, "the input's numel");
    sameOrDisjoint(output, "output", input, "input");
  }

  void sameOrDisjoint(const Tensor& out, Name outWhat, const Tensor& in, Name inWhat) const {
    if (out.data == in.data || out.nbytes() == 0 || in.nbytes() == 0) return;
    const auto o = reinterpret_cast<uintptr_t>(out.data);
    const auto i = reinterpret_cast<uintptr_t>(in.data);
    if (o < i + in.nbytes() && i < o + out.nbytes()) {
      fail(outWhat, " (", out.nbytes(), " bytes at ", out.data, ") partly overlaps ", inWhat, " (",
           in.nbytes(), " bytes at ", in.data,
           "): pass the same tensor for in place, or disjoint "
           "memory");
    }
  }

  // `part` (numel n) is disjoint from `whole` or is exactly whole's index-th block of n elements
  // (in place: allgatherIntoTensor's input, reduceScatterTensor's output).
  void blockOrDisjoint(const Tensor& whole, Name wholeWhat, const Tensor& part, Name partWhat,
                       size_t index) const {
    if (whole.nbytes() == 0 || part.nbytes() == 0) return;
    const auto w = reinterpret_cast<uintptr_t>(whole.data);
    const auto p = reinterpret_cast<uintptr_t>(part.data);
    if (p == w + index * part.nbytes() || p >= w + whole.nbytes() || w >= p + part.nbytes()) {
      return;
    }
    fail(partWhat, " (", part.nbytes(), " bytes at ", part.data, ") partly overlaps ", wholeWhat,
         " (", whole.nbytes(), " bytes at ", whole.data, "): pass its block ", index,
         " for in place, or disjoint memory");
  }

  void numel(const Tensor& t, Name what, size_t expected, const char* why) const {
    if (t.numel != expected) {
      fail(what, " has ", t.numel, " elements, expected ", expected, " (", why, ")");
    }
  }

  // n * size(), or a failure if that overflows.
  size_t times(size_t n, Name what) const {
    const size_t s = static_cast<size_t>(pg_.size());
    if (n > std::numeric_limits<size_t>::max() / s) {
      fail(what, " has ", n, " elements; ", n, " * group size ", s, " overflows");
    }
    return n * s;
  }

  // alltoall: the block this rank receives from itself is the block it sends itself. (Blocks
  // exchanged with other ranks are checked by the backends, which see both sides.)
  void ownBlock(size_t received, size_t sent, Name outWhat, Name inWhat) const {
    if (received != sent) {
      fail("rank ", pg_.rank(), " receives ", received, " elements from itself (", outWhat,
           ") but sends itself ", sent, " (", inWhat, ")");
    }
  }

  void root(int r) const {
    if (r < 0 || r >= pg_.size()) fail("root rank ", r, " is out of range [0, ", pg_.size(), ")");
  }

  void peer(int r, const char* what) const {
    if (r < 0 || r >= pg_.size()) {
      fail(what, " rank ", r, " is out of range [0, ", pg_.size(), ")");
    }
    if (r == pg_.rank()) fail(what, " rank ", r, " is this rank itself");
  }

  void count(size_t got, Name what) const {
    if (got != static_cast<size_t>(pg_.size())) {
      fail(what, " has ", got, " tensors, expected ", pg_.size(), " (one per rank)");
    }
  }

  void reduceOp(const ReduceOp& op, const Tensor& t) const {
    if (static_cast<int>(op.kind) >= ReduceOp::kNumKinds) {
      fail("invalid reduce op ", static_cast<int>(op.kind));
    }
    if (!isDefined(op.kind, t.dtype)) {
      fail("reduce op ", toString(op.kind), " is not defined on ", toString(t.dtype),
           " tensors (bitwise ops need integer or bool tensors)");
    }
    if (!pg_.supports(op.kind, t.dtype, t.device)) {
      fail("backend ", pg_.backendName(), " does not support reduce op ", toString(op.kind), " on ",
           toString(t.dtype), " tensors on device ", toString(t.device));
    }
  }

  // Validates (or, when empty, builds equal) splits of `t` into size() chunks.
  std::vector<size_t> splits(const std::vector<size_t>& given, const Tensor& t, Name what) const {
    const size_t s = static_cast<size_t>(pg_.size());
    if (given.empty()) {
      if (t.numel % s != 0) {
        fail(what, " has ", t.numel, " elements, not divisible by group size ", s,
             " (give explicit splits for uneven chunks)");
      }
      return std::vector<size_t>(s, t.numel / s);
    }
    if (given.size() != s) {
      fail(what, " splits have ", given.size(), " entries, expected ", s, " (one per rank)");
    }
    size_t sum = 0;
    for (size_t v : given) {
      if (v > std::numeric_limits<size_t>::max() - sum) fail(what, " splits overflow");
      sum += v;
    }
    if (sum != t.numel) {
      fail(what, " splits sum to ", sum, " elements but ", what, " has ", t.numel);
    }
    return given;
  }

 private:
  const ProcessGroup& pg_;
  const OpType op_;
};

void setReduceOp(OpDesc& d, const ReduceOp& op) {
  d.reduceOp = op.kind;
  d.hasReduceOp = true;
}

// A flat tensor made of several (Broadcast/AllgatherOptions::parts): their sizes, which must sum
// to its numel, go into the description, so ranks that split it differently fail.
void setParts(const Check& c, OpDesc& d, const std::shared_ptr<const std::vector<uint64_t>>& parts,
              size_t numel) {
  if (!parts) return;
  uint64_t sum = 0;
  for (uint64_t n : *parts) sum += n;
  if (sum != numel) c.fail("parts sum to ", sum, " elements but the tensor has ", numel);
  d.setParts(*parts);
}

Name at(const char* name, size_t i) {
  return Name(name, i);
}

}  // namespace

// Clears currentOp() when the wrapper returns or do*() throws.
struct ProcessGroup::CurrentOpScope {
  const OpDesc*& current;
  ~CurrentOpScope() { current = nullptr; }
};

// The tail every wrapper shares: sequence numbers and flight record (beginOp), currentOp() for
// the duration of the backend's do*() call (`run(seq)`), and the Work's bookkeeping (track).
template <typename Run>
std::shared_ptr<Work> ProcessGroup::issue(OpType op, OpDesc& d, Run&& run) {
  const uint64_t seq = beginOp(op, d);
  CurrentOpScope scope{current_};
  return track(run(seq), d);
}

std::shared_ptr<Work> ProcessGroup::broadcast(Tensor tensor, const BroadcastOptions& opts) {
  Check c(*this, OpType::kBroadcast);
  c.timeout(opts.timeout);
  c.root(opts.rootRank);
  c.tensor(tensor, "tensor");
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  d.root = opts.rootRank;
  setParts(c, d, opts.parts, tensor.numel);
  return issue(OpType::kBroadcast, d,
               [&](uint64_t seq) { return doBroadcast(tensor, withResolvedTimeout(opts), seq); });
}

std::shared_ptr<Work> ProcessGroup::allreduce(Tensor tensor, const AllreduceOptions& opts) {
  Check c(*this, OpType::kAllreduce);
  c.timeout(opts.timeout);
  c.tensor(tensor, "tensor");
  c.reduceOp(opts.reduceOp, tensor);
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kAllreduce, d,
               [&](uint64_t seq) { return doAllreduce(tensor, withResolvedTimeout(opts), seq); });
}

std::shared_ptr<Work> ProcessGroup::allreduceInto(Tensor output, Tensor input,
                                                  const AllreduceOptions& opts) {
  Check c(*this, OpType::kAllreduce);
  c.timeout(opts.timeout);
  c.tensor(input, "input");
  c.outOfPlaceOutput(output, input);
  c.reduceOp(opts.reduceOp, input);
  OpDesc d;
  d.dtype = input.dtype;
  d.count = input.numel;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kAllreduce, d, [&](uint64_t seq) {
    const AllreduceOptions o = withResolvedTimeout(opts);
    return output.data == input.data ? doAllreduce(output, o, seq)
                                     : doAllreduceInto(output, input, o, seq);
  });
}

std::shared_ptr<Work> ProcessGroup::allreduceCoalesced(const std::vector<Tensor>& tensors,
                                                       const AllreduceCoalescedOptions& opts) {
  Check c(*this, OpType::kAllreduceCoalesced);
  c.timeout(opts.timeout);
  if (tensors.empty()) c.fail("no tensors given");
  for (size_t i = 0; i < tensors.size(); ++i) {
    c.tensor(tensors[i], at("tensors", i));
    c.like(tensors[i], at("tensors", i), tensors[0], "tensors[0]");
  }
  c.reduceOp(opts.reduceOp, tensors[0]);
  OpDesc d;
  d.dtype = tensors[0].dtype;
  std::vector<uint64_t> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    d.count += t.numel;
    parts.push_back(t.numel);
  }
  // Compared across ranks (a hash on the wire): the same total split differently would reduce
  // misaligned elements. The dtype is one per rank (checked above) and compared as the op's.
  d.setParts(std::move(parts));
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kAllreduceCoalesced, d, [&](uint64_t seq) {
    return doAllreduceCoalesced(tensors, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::reduce(Tensor tensor, const ReduceOptions& opts) {
  Check c(*this, OpType::kReduce);
  c.timeout(opts.timeout);
  c.root(opts.rootRank);
  c.tensor(tensor, "tensor");
  c.reduceOp(opts.reduceOp, tensor);
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  d.root = opts.rootRank;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kReduce, d,
               [&](uint64_t seq) { return doReduce(tensor, withResolvedTimeout(opts), seq); });
}

std::shared_ptr<Work> ProcessGroup::reduceInto(Tensor output, Tensor input,
                                               const ReduceOptions& opts) {
  Check c(*this, OpType::kReduce);
  c.timeout(opts.timeout);
  c.root(opts.rootRank);
  c.tensor(input, "input");
  const bool root = rank() == opts.rootRank;
  if (root) {
    c.outOfPlaceOutput(output, input);
  } else {
    output = Tensor{};  // not this rank's to write
  }
  c.reduceOp(opts.reduceOp, input);
  OpDesc d;
  d.dtype = input.dtype;
  d.count = input.numel;
  d.root = opts.rootRank;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kReduce, d, [&](uint64_t seq) {
    const ReduceOptions o = withResolvedTimeout(opts);
    // In place on the root, or a non-root rank's input (reduce() leaves it as it was).
    return !root || output.data == input.data ? doReduce(input, o, seq)
                                              : doReduceInto(output, input, o, seq);
  });
}

// The defaults: copy, then the in-place op (CPU memory only: other devices need the backend's
// own copy, so they are refused).
namespace {
void copyForInPlace(const ProcessGroup& pg, const char* op, const Tensor& output,
                    const Tensor& input) {
  if (!input.device.isCPU()) {
    C10D_THROW(InvalidArgument, op, ": backend ", pg.backendName(), " of group ", pg.name(),
               " has no out-of-place form on device ", toString(input.device),
               " (use the in-place call)");
  }
  if (input.nbytes() > 0) std::memcpy(output.data, input.data, input.nbytes());
}
}  // namespace

std::shared_ptr<Work> ProcessGroup::doAllreduceInto(Tensor output, Tensor input,
                                                    const AllreduceOptions& opts, uint64_t seq) {
  copyForInPlace(*this, "allreduceInto", output, input);
  return doAllreduce(output, opts, seq);
}

std::shared_ptr<Work> ProcessGroup::doReduceInto(Tensor output, Tensor input,
                                                 const ReduceOptions& opts, uint64_t seq) {
  copyForInPlace(*this, "reduceInto", output, input);
  return doReduce(output, opts, seq);
}

std::shared_ptr<Work> ProcessGroup::allgather(const std::vector<Tensor>& outputs, Tensor input,
                                              const AllgatherOptions& opts) {
  Check c(*this, OpType::kAllgather);
  c.timeout(opts.timeout);
  c.tensor(input, "input");
  c.count(outputs.size(), "outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    c.tensor(outputs[i], at("outputs", i));
    c.like(outputs[i], at("outputs", i), input, "input");
    c.numel(outputs[i], at("outputs", i), input.numel, "the input's numel");
    c.sameOrDisjoint(outputs[i], at("outputs", i), input, "input");
  }
  OpDesc d;
  d.dtype = input.dtype;
  d.count = input.numel;
  return issue(OpType::kAllgather, d, [&](uint64_t seq) {
    return doAllgather(outputs, input, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::allgatherIntoTensor(Tensor output, Tensor input,
                                                        const AllgatherOptions& opts) {
  Check c(*this, OpType::kAllgatherIntoTensor);
  c.timeout(opts.timeout);
  c.tensor(input, "input");
  c.tensor(output, "output");
  c.like(output, "output", input, "input");
  c.numel(output, "output", c.times(input.numel, "input"), "group size * the input's numel");
  c.blockOrDisjoint(output, "output", input, "input", static_cast<size_t>(rank()));
  OpDesc d;
  d.dtype = input.dtype;
  d.count = input.numel;
  setParts(c, d, opts.parts, input.numel);
  return issue(OpType::kAllgatherIntoTensor, d, [&](uint64_t seq) {
    return doAllgatherIntoTensor(output, input, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::gather(const std::vector<Tensor>& outputs, Tensor input,
                                           const GatherOptions& opts) {
  Check c(*this, OpType::kGather);
  c.timeout(opts.timeout);
  c.root(opts.rootRank);
  c.tensor(input, "input");
  if (rank() == opts.rootRank) {
    c.count(outputs.size(), "outputs (on the root)");
    for (size_t i = 0; i < outputs.size(); ++i) {
      c.tensor(outputs[i], at("outputs", i));
      c.like(outputs[i], at("outputs", i), input, "input");
      c.numel(outputs[i], at("outputs", i), input.numel, "the input's numel");
      c.sameOrDisjoint(outputs[i], at("outputs", i), input, "input");
    }
  } else if (!outputs.empty()) {
    c.fail(outputs.size(), " outputs given on a non-root rank (root is ", opts.rootRank,
           "; only the root receives)");
  }
  OpDesc d;
  d.dtype = input.dtype;
  d.count = input.numel;
  d.root = opts.rootRank;
  return issue(OpType::kGather, d, [&](uint64_t seq) {
    return doGather(outputs, input, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::scatter(Tensor output, const std::vector<Tensor>& inputs,
                                            const ScatterOptions& opts) {
  Check c(*this, OpType::kScatter);
  c.timeout(opts.timeout);
  c.root(opts.rootRank);
  c.tensor(output, "output");
  if (rank() == opts.rootRank) {
    c.count(inputs.size(), "inputs (on the root)");
    for (size_t i = 0; i < inputs.size(); ++i) {
      c.tensor(inputs[i], at("inputs", i));
      c.like(inputs[i], at("inputs", i), output, "output");
      c.numel(inputs[i], at("inputs", i), output.numel, "the output's numel");
      c.sameOrDisjoint(output, "output", inputs[i], at("inputs", i));
    }
  } else if (!inputs.empty()) {
    c.fail(inputs.size(), " inputs given on a non-root rank (root is ", opts.rootRank,
           "; only the root sends)");
  }
  OpDesc d;
  d.dtype = output.dtype;
  d.count = output.numel;
  d.root = opts.rootRank;
  return issue(OpType::kScatter, d, [&](uint64_t seq) {
    return doScatter(output, inputs, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::reduceScatter(Tensor output, const std::vector<Tensor>& inputs,
                                                  const ReduceScatterOptions& opts) {
  Check c(*this, OpType::kReduceScatter);
  c.timeout(opts.timeout);
  c.tensor(output, "output");
  c.count(inputs.size(), "inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    c.tensor(inputs[i], at("inputs", i));
    c.like(inputs[i], at("inputs", i), output, "output");
    c.numel(inputs[i], at("inputs", i), output.numel, "the output's numel");
    c.sameOrDisjoint(output, "output", inputs[i], at("inputs", i));
  }
  c.reduceOp(opts.reduceOp, output);
  OpDesc d;
  d.dtype = output.dtype;
  d.count = output.numel;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kReduceScatter, d, [&](uint64_t seq) {
    return doReduceScatter(output, inputs, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::reduceScatterTensor(Tensor output, Tensor input,
                                                        const ReduceScatterOptions& opts) {
  Check c(*this, OpType::kReduceScatterTensor);
  c.timeout(opts.timeout);
  c.tensor(output, "output");
  c.tensor(input, "input");
  c.like(input, "input", output, "output");
  c.numel(input, "input", c.times(output.numel, "output"), "group size * the output's numel");
  c.blockOrDisjoint(input, "input", output, "output", static_cast<size_t>(rank()));
  c.reduceOp(opts.reduceOp, output);
  OpDesc d;
  d.dtype = output.dtype;
  d.count = output.numel;
  setReduceOp(d, opts.reduceOp);
  return issue(OpType::kReduceScatterTensor, d, [&](uint64_t seq) {
    return doReduceScatterTensor(output, input, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::alltoall(const std::vector<Tensor>& outputs,
                                             const std::vector<Tensor>& inputs,
                                             const AllToAllOptions& opts) {
  Check c(*this, OpType::kAlltoall);
  c.timeout(opts.timeout);
  c.count(inputs.size(), "inputs");
  c.count(outputs.size(), "outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    c.tensor(inputs[i], at("inputs", i));
    c.like(inputs[i], at("inputs", i), inputs[0], "inputs[0]");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    c.tensor(outputs[i], at("outputs", i));
    c.like(outputs[i], at("outputs", i), inputs[0], "inputs[0]");
  }
  const size_t me = static_cast<size_t>(rank());
  c.ownBlock(outputs[me].numel, inputs[me].numel, at("outputs", me), at("inputs", me));
  OpDesc d;
  d.dtype = inputs[0].dtype;
  std::vector<uint64_t> send, recv;
  send.reserve(inputs.size());
  recv.reserve(outputs.size());
  for (const Tensor& t : inputs) send.push_back(t.numel);
  for (const Tensor& t : outputs) recv.push_back(t.numel);
  d.setSplits(std::move(send), std::move(recv));
  return issue(OpType::kAlltoall, d, [&](uint64_t seq) {
    return doAlltoall(outputs, inputs, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::alltoallSingle(Tensor output, Tensor input,
                                                   const std::vector<size_t>& outputSplits,
                                                   const std::vector<size_t>& inputSplits,
                                                   const AllToAllOptions& opts) {
  Check c(*this, OpType::kAlltoallSingle);
  c.timeout(opts.timeout);
  c.tensor(input, "input");
  c.tensor(output, "output");
  c.like(output, "output", input, "input");
  std::vector<size_t> in = c.splits(inputSplits, input, "input");
  std::vector<size_t> out = c.splits(outputSplits, output, "output");
  const size_t me = static_cast<size_t>(rank());
  c.ownBlock(out[me], in[me], at("outputSplits", me), at("inputSplits", me));
  c.sameOrDisjoint(output, "output", input, "input");
  OpDesc d;
  d.dtype = input.dtype;
  d.setSplits(std::vector<uint64_t>(in.begin(), in.end()),
              std::vector<uint64_t>(out.begin(), out.end()));
  return issue(OpType::kAlltoallSingle, d, [&](uint64_t seq) {
    return doAlltoallSingle(output, input, out, in, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::barrier(const BarrierOptions& opts) {
  Check c(*this, OpType::kBarrier);
  c.timeout(opts.timeout);
  OpDesc d;
  d.dtype = DataType::kUInt8;
  return issue(OpType::kBarrier, d,
               [&](uint64_t seq) { return doBarrier(withResolvedTimeout(opts), seq); });
}

std::shared_ptr<Work> ProcessGroup::send(Tensor tensor, int dstRank, const SendRecvOptions& opts) {
  Check c(*this, OpType::kSend);
  c.timeout(opts.timeout);
  c.peer(dstRank, "destination");
  c.tensor(tensor, "tensor");
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  d.peer = dstRank;
  return issue(OpType::kSend, d, [&](uint64_t seq) {
    return doSend(tensor, dstRank, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::recv(Tensor tensor, int srcRank, const SendRecvOptions& opts) {
  Check c(*this, OpType::kRecv);
  c.timeout(opts.timeout);
  c.peer(srcRank, "source");
  c.tensor(tensor, "tensor");
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  d.peer = srcRank;
  return issue(OpType::kRecv, d, [&](uint64_t seq) {
    return doRecv(tensor, srcRank, withResolvedTimeout(opts), seq);
  });
}

std::shared_ptr<Work> ProcessGroup::recvAnySource(Tensor tensor, const SendRecvOptions& opts) {
  Check c(*this, OpType::kRecvAnySource);
  c.timeout(opts.timeout);
  c.tensor(tensor, "tensor");
  if (size() < 2) c.fail("no other rank to receive from");
  OpDesc d;
  d.dtype = tensor.dtype;
  d.count = tensor.numel;
  return issue(OpType::kRecvAnySource, d,
               [&](uint64_t seq) { return doRecv(tensor, -1, withResolvedTimeout(opts), seq); });
}

C10D_NAMESPACE_END
}  // namespace c10d
