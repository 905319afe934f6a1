#include "tests/faults/fault_ops.h"

#include <functional>
#include <sstream>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

// Rank r's element i at iteration `it`: distinct per rank and element (mod 4099), small enough
// that a sum over 8 ranks stays exact in int32.
int32_t value(int r, int it, size_t i) {
  return static_cast<int32_t>((r + 1) * 1009 + (it % 1000) * 31 + static_cast<int>(i % 4099));
}

int32_t sumOver(int size, int it, size_t i) {
  int32_t s = 0;
  for (int r = 0; r < size; ++r) s += value(r, it, i);
  return s;
}

// "" when got[k] == want(k) for every k, else the first mismatch.
std::string expect(const std::vector<int32_t>& got, const std::function<int32_t(size_t)>& want,
                   const std::string& what) {
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k] != want(k)) {
      std::ostringstream ss;
      ss << what << "[" << k << "] = " << got[k] << ", expected " << want(k);
      return ss.str();
    }
  }
  return "";
}

}  // namespace

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kAllreduceCoalesced:
      return "allreduce_coalesced";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kAllgatherIntoTensor:
      return "allgather_into_tensor";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kReduceScatterTensor:
      return "reduce_scatter_tensor";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kAlltoallSingle:
      return "alltoall_single";
    case Collective::kBarrier:
      return "barrier";
  }
  return "?";
}

std::vector<Tensor> CollectiveRun::views(std::vector<Vec>& vs) {
  std::vector<Tensor> out;
  for (Vec& v : vs) out.push_back(view(v));
  return out;
}

CollectiveRun::CollectiveRun(Collective c, int rank, int size, size_t count, int iter)
    : c_(c), rank_(rank), size_(size), n_(count), iter_(iter) {
  const size_t n = n_;
  auto mine = [&](size_t offset, size_t len) {
    Vec v(len);
    for (size_t i = 0; i < len; ++i) v[i] = value(rank, iter, offset + i);
    return v;
  };
  switch (c_) {
    case Collective::kAllreduce:
    case Collective::kReduce:
      a_ = mine(0, n);
      break;
    case Collective::kAllreduceCoalesced:
      a_ = mine(0, n);
      b_ = mine(n, n / 2 + 1);
      break;
    case Collective::kBroadcast:
      a_ = rank == root() ? mine(0, n) : Vec(n, -1);
      break;
    case Collective::kAllgather:
      a_ = mine(0, n);
      outs_.assign(size, Vec(n, -1));
      break;
    case Collective::kAllgatherIntoTensor:
      a_ = mine(0, n);
      b_.assign(n * size, -1);
      break;
    case Collective::kGather:
      a_ = mine(0, n);
      if (rank == root()) outs_.assign(size, Vec(n, -1));
      break;
    case Collective::kScatter:
      // The root sends rank r the values rank r would own: value(r, iter, i).
      a_.assign(n, -1);
      if (rank == root()) {
        for (int r = 0; r < size; ++r) {
          Vec v(n);
          for (size_t i = 0; i < n; ++i) v[i] = value(r, iter, i);
          ins_.push_back(std::move(v));
        }
      }
      break;
    case Collective::kReduceScatter:
      for (int r = 0; r < size; ++r) ins_.push_back(mine(r * n, n));
      b_.assign(n, -1);
      break;
    case Collective::kReduceScatterTensor:
    case Collective::kAlltoallSingle:
      a_ = mine(0, n * size);
      b_.assign(n * size, -1);
      if (c_ == Collective::kReduceScatterTensor) b_.assign(n, -1);
      break;
    case Collective::kAlltoall:
      for (int r = 0; r < size; ++r) ins_.push_back(mine(r * n, n));
      outs_.assign(size, Vec(n, -1));
      break;
    case Collective::kBarrier:
      break;
  }
}

std::shared_ptr<Work> CollectiveRun::issue(ProcessGroup& pg, Milliseconds timeout) {
  const ReduceOp sum = ReduceOp::SUM;
  switch (c_) {
    case Collective::kAllreduce:
      return pg.allreduce(view(a_), AllreduceOptions{sum, timeout});
    case Collective::kAllreduceCoalesced:
      return pg.allreduceCoalesced({view(a_), view(b_)}, AllreduceOptions{sum, timeout});
    case Collective::kBroadcast:
      return pg.broadcast(view(a_), BroadcastOptions{root(), timeout});
    case Collective::kReduce:
      return pg.reduce(view(a_), ReduceOptions{sum, root(), timeout});
    case Collective::kAllgather:
      return pg.allgather(views(outs_), view(a_), AllgatherOptions{timeout});
    case Collective::kAllgatherIntoTensor:
      return pg.allgatherIntoTensor(view(b_), view(a_), AllgatherOptions{timeout});
    case Collective::kGather:
      return pg.gather(views(outs_), view(a_), GatherOptions{root(), timeout});
    case Collective::kScatter:
      return pg.scatter(view(a_), views(ins_), ScatterOptions{root(), timeout});
    case Collective::kReduceScatter:
      return pg.reduceScatter(view(b_), views(ins_), ReduceScatterOptions{sum, timeout});
    case Collective::kReduceScatterTensor:
      return pg.reduceScatterTensor(view(b_), view(a_), ReduceScatterOptions{sum, timeout});
    case Collective::kAlltoall:
      return pg.alltoall(views(outs_), views(ins_), AllToAllOptions{timeout});
    case Collective::kAlltoallSingle:
      return pg.alltoallSingle(view(b_), view(a_), {}, {}, AllToAllOptions{timeout});
    case Collective::kBarrier:
      return pg.barrier(BarrierOptions{timeout});
  }
  return nullptr;
}

std::string CollectiveRun::verify() const {
  const int it = iter_, size = size_, rank = rank_;
  const size_t n = n_;
  std::string bad;
  auto check = [&bad](const Vec& got, const std::function<int32_t(size_t)>& want,
                      const std::string& what) {
    if (bad.empty()) bad = expect(got, want, what);
  };
  switch (c_) {
    case Collective::kAllreduce:
      check(
          a_, [&](size_t i) { return sumOver(size, it, i); }, "allreduce out");
      break;
    case Collective::kAllreduceCoalesced:
      check(
          a_, [&](size_t i) { return sumOver(size, it, i); }, "allreduce_coalesced out0");
      check(
          b_, [&](size_t i) { return sumOver(size, it, n + i); }, "allreduce_coalesced out1");
      break;
    case Collective::kBroadcast:
      check(
          a_, [&](size_t i) { return value(root(), it, i); }, "broadcast out");
      break;
    case Collective::kReduce:
      if (rank == root())
        check(
            a_, [&](size_t i) { return sumOver(size, it, i); }, "reduce out");
      break;
    case Collective::kAllgather:
    case Collective::kGather:
      for (int r = 0; r < static_cast<int>(outs_.size()); ++r)
        check(
            outs_[r], [&](size_t i) { return value(r, it, i); },
            "gathered[" + std::to_string(r) + "]");
      break;
    case Collective::kAllgatherIntoTensor:
      check(
          b_, [&](size_t k) { return value(static_cast<int>(k / n), it, k % n); },
          "allgather_into_tensor out");
      break;
    case Collective::kScatter:
      check(
          a_, [&](size_t i) { return value(rank, it, i); }, "scatter out");
      break;
    case Collective::kReduceScatter:
    case Collective::kReduceScatterTensor:
      check(
          b_, [&](size_t i) { return sumOver(size, it, rank * n + i); }, "reduce_scatter out");
      break;
    case Collective::kAlltoall:
      for (int r = 0; r < size; ++r)
        check(
            outs_[r], [&](size_t i) { return value(r, it, rank * n + i); },
            "alltoall out[" + std::to_string(r) + "]");
      break;
    case Collective::kAlltoallSingle:
      check(
          b_, [&](size_t k) { return value(static_cast<int>(k / n), it, rank * n + k % n); },
          "alltoall_single out");
      break;
    case Collective::kBarrier:
      break;
  }
  return bad;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
