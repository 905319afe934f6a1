// runSweep: every collective x dtype x supported reduce op x count, checked against references.
#include <algorithm>
#include <set>
#include <sstream>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

namespace {

std::string caseName(const ProcessGroup& pg, const char* op, DataType dt, const ReduceOp* rop,
                     size_t count) {
  std::ostringstream ss;
  ss << pg.name() << " rank " << pg.rank() << "/" << pg.size() << " " << op << " " << toString(dt);
  if (rop != nullptr) ss << " " << toString(*rop);
  ss << " count " << count;
  return ss.str();
}

bool wanted(const SweepOptions& o, DataType dt, ReduceOp::Kind k) {
  if (o.only.empty()) return true;
  return std::find(o.only.begin(), o.only.end(), std::make_pair(dt, k)) != o.only.end();
}

bool wantedDtype(const SweepOptions& o, DataType dt) {
  if (o.only.empty()) return true;
  for (auto& p : o.only) {
    if (p.first == dt) return true;
  }
  return false;
}

void reductions(ProcessGroup& pg, const BackendParam& p, DataType dt, size_t c,
                const SweepOptions& o) {
  const int r = pg.rank(), s = pg.size();
  int rootCounter = 0;
  for (const ReduceOp& op : opsFor(pg, dt, p.device)) {
    if (!wanted(o, dt, op.kind)) continue;
    auto ref = [&](size_t i) { return reference(dt, op, s, i); };
    const double ulps = ulpsTolerance(dt, op);
    {
      Buffer b(p, c, dt);
      fillInput(b, op, r);
      AllreduceOptions ao;
      ao.reduceOp = op;
      pg.allreduce(b.tensor(), ao)->wait();
      expectValues(b, ref, caseName(pg, "allreduce", dt, &op, c), s, ulps);
    }
    {
      // Out of place: the output gets the reduction, the input stays as it was.
      Buffer in(p, c, dt), out(p, c, dt);
      fillInput(in, op, r);
      fillInput(out, op, r + 17);  // stale contents that must not leak into the result
      AllreduceOptions ao;
      ao.reduceOp = op;
      pg.allreduceInto(out.tensor(), in.tensor(), ao)->wait();
      expectValues(out, ref, caseName(pg, "allreduceInto", dt, &op, c), s, ulps);
      expectValues(
          in, [&](size_t i) { return inputValue(dt, op, r, i); },
          caseName(pg, "allreduceInto(input unchanged)", dt, &op, c), s);
    }
    {
      const int root = rootCounter++ % s;
      Buffer b(p, c, dt);
      fillInput(b, op, r);
      ReduceOptions ro;
      ro.reduceOp = op;
      ro.rootRank = root;
      pg.reduce(b.tensor(), ro)->wait();
      if (r == root) {
        expectValues(b, ref, caseName(pg, "reduce(root)", dt, &op, c), s, ulps);
      } else {
        expectValues(
            b, [&](size_t i) { return inputValue(dt, op, r, i); },
            caseName(pg, "reduce(non-root unchanged)", dt, &op, c), s);
      }
    }
    {
      const int root = rootCounter++ % s;
      Buffer in(p, c, dt), out(p, c, dt);
      fillInput(in, op, r);
      fillInput(out, op, r + 17);
      ReduceOptions ro;
      ro.reduceOp = op;
      ro.rootRank = root;
      // Off the root the output is not the rank's to write: pass none.
      pg.reduceInto(r == root ? out.tensor() : Tensor{}, in.tensor(), ro)->wait();
      if (r == root) expectValues(out, ref, caseName(pg, "reduceInto(root)", dt, &op, c), s, ulps);
      expectValues(
          in, [&](size_t i) { return inputValue(dt, op, r, i); },
          caseName(pg, "reduceInto(input unchanged)", dt, &op, c), s);
    }
    {
      std::vector<Buffer> bufs;
      std::vector<Tensor> ts;
      const size_t counts[] = {c, 1, 2 * c};
      size_t off = 0;
      for (size_t n : counts) {
        bufs.emplace_back(p, n, dt);
        fillInput(bufs.back(), op, r, off);
        off += n;
      }
      for (auto& b : bufs) ts.push_back(b.tensor());
      pg.allreduceCoalesced(ts, AllreduceOptions{op, kUnsetTimeout})->wait();
      off = 0;
      for (auto& b : bufs) {
        expectValues(
            b, [&](size_t i) { return reference(dt, op, s, off + i); },
            caseName(pg, "allreduceCoalesced", dt, &op, b.numel()), s, ulps);
        off += b.numel();
      }
    }
    ReduceScatterOptions rso;
    rso.reduceOp = op;
    {
      std::vector<Buffer> ins;
      std::vector<Tensor> ts;
      for (int j = 0; j < s; ++j) {
        ins.emplace_back(p, c, dt);
        fillInput(ins.back(), op, r, j * c);
        ts.push_back(ins.back().tensor());
      }
      Buffer out(p, c, dt);
      pg.reduceScatter(out.tensor(), ts, rso)->wait();
      expectValues(
          out, [&](size_t i) { return reference(dt, op, s, r * c + i); },
          caseName(pg, "reduceScatter", dt, &op, c), s, ulps);
    }
    {
      Buffer in(p, c * s, dt);
      fillInput(in, op, r);
      Buffer out(p, c, dt);
      pg.reduceScatterTensor(out.tensor(), in.tensor(), rso)->wait();
      expectValues(
          out, [&](size_t i) { return reference(dt, op, s, r * c + i); },
          caseName(pg, "reduceScatterTensor", dt, &op, c), s, ulps);
    }
    {
      // In place: the output is this rank's own chunk of the input (what ZeRO-style callers do;
      // NCCL documents it as supported). The backend must not read that chunk after writing it.
      Buffer in(p, c * s, dt);
      fillInput(in, op, r);
      pg.reduceScatterTensor(in.tensor().slice(static_cast<size_t>(r) * c, c), in.tensor(), rso)
          ->wait();
      in.download();
      Buffer got(p, c, dt);
      for (size_t i = 0; i < c; ++i) got.set(i, in.get(static_cast<size_t>(r) * c + i));
      got.upload();  // expectValues() reads the device copy
      expectValues(
          got, [&](size_t i) { return reference(dt, op, s, r * c + i); },
          caseName(pg, "reduceScatterTensor in place", dt, &op, c), s, ulps);
    }
  }
}

// Value of element i of the message rank `from` sends to rank `to`: seeds from * s + to are
// distinct for every (from, to) pair, so a message delivered to the wrong rank, or from the wrong
// one, differs at every element.
double msg(DataType dt, int from, int to, int s, size_t i) {
  return movementValue(dt, from * s + to, i);
}

void dataMovement(ProcessGroup& pg, const BackendParam& p, DataType dt, size_t c, int round) {
  const int r = pg.rank(), s = pg.size();
  const int root = round % s;
  auto val = [&](int rank, size_t i) { return movementValue(dt, rank, i); };
  {
    // Non-roots start with another seed's data (root + 1 + rank): a broadcast that leaves any of
    // it, or delivers from the wrong rank, fails.
    Buffer b(p, c, dt);
    fillPattern(b, r == root ? root : root + 1 + r);
    pg.broadcast(b.tensor(), BroadcastOptions{root, kUnsetTimeout})->wait();
    expectValues(
        b, [&](size_t i) { return val(root, i); }, caseName(pg, "broadcast", dt, nullptr, c), s);
  }
  Buffer in(p, c, dt);
  fillPattern(in, r);
  {
    std::vector<Buffer> outs;
    std::vector<Tensor> ts;
    for (int j = 0; j < s; ++j) {
      outs.emplace_back(p, c, dt);
      ts.push_back(outs.back().tensor());
    }
    pg.allgather(ts, in.tensor())->wait();
    for (int j = 0; j < s; ++j) {
      expectValues(
          outs[j], [&](size_t i) { return val(j, i); }, caseName(pg, "allgather", dt, nullptr, c),
          s);
    }
  }
  {
    Buffer out(p, c * s, dt);
    pg.allgatherIntoTensor(out.tensor(), in.tensor())->wait();
    expectValues(
        out,
        [&](size_t i) {
          return val(static_cast<int>(i / std::max<size_t>(c, 1)), i % std::max<size_t>(c, 1));
        },
        caseName(pg, "allgatherIntoTensor", dt, nullptr, c), s);
  }
  {
    std::vector<Buffer> outs;
    std::vector<Tensor> ts;
    for (int j = 0; r == root && j < s; ++j) {
      outs.emplace_back(p, c, dt);
      ts.push_back(outs.back().tensor());
    }
    pg.gather(ts, in.tensor(), GatherOptions{root, kUnsetTimeout})->wait();
    for (size_t j = 0; j < outs.size(); ++j) {
      expectValues(
          outs[j], [&](size_t i) { return val(static_cast<int>(j), i); },
          caseName(pg, "gather", dt, nullptr, c), s);
    }
  }
  {
    std::vector<Buffer> ins;
    std::vector<Tensor> ts;
    for (int j = 0; r == root && j < s; ++j) {
      ins.emplace_back(p, c, dt);
      fillPattern(ins.back(), j, root);
      ts.push_back(ins.back().tensor());
    }
    Buffer out(p, c, dt);
    pg.scatter(out.tensor(), ts, ScatterOptions{root, kUnsetTimeout})->wait();
    expectValues(
        out, [&](size_t i) { return val(r, i + root); }, caseName(pg, "scatter", dt, nullptr, c),
        s);
  }
  // alltoall with uneven sizes: rank a sends n(a, b) elements to rank b.
  auto n = [&](int a, int b) { return c + static_cast<size_t>((a + b) % 3); };
  {
    std::vector<Buffer> ins, outs;
    std::vector<Tensor> ti, to;
    for (int j = 0; j < s; ++j) {
      ins.emplace_back(p, n(r, j), dt);
      for (size_t i = 0; i < ins.back().numel(); ++i) ins.back().set(i, msg(dt, r, j, s, i));
      ins.back().upload();
      outs.emplace_back(p, n(j, r), dt);
    }
    for (int j = 0; j < s; ++j) {
      ti.push_back(ins[j].tensor());
      to.push_back(outs[j].tensor());
    }
    pg.alltoall(to, ti)->wait();
    for (int j = 0; j < s; ++j) {
      expectValues(
          outs[j], [&](size_t i) { return msg(dt, j, r, s, i); },
          caseName(pg, "alltoall(uneven)", dt, nullptr, n(j, r)), s);
    }
  }
  for (bool even : {true, false}) {
    std::vector<size_t> inSplits, outSplits;
    for (int j = 0; j < s; ++j) {
      inSplits.push_back(even ? c : n(r, j));
      outSplits.push_back(even ? c : n(j, r));
    }
    size_t inTotal = 0, outTotal = 0;
    for (int j = 0; j < s; ++j) inTotal += inSplits[j], outTotal += outSplits[j];
    Buffer bi(p, inTotal, dt), bo(p, outTotal, dt);
    size_t off = 0;
    for (int j = 0; j < s; ++j) {
      for (size_t i = 0; i < inSplits[j]; ++i) bi.set(off + i, msg(dt, r, j, s, i));
      off += inSplits[j];
    }
    bi.upload();
    pg.alltoallSingle(bo.tensor(), bi.tensor(), even ? std::vector<size_t>{} : outSplits,
                      even ? std::vector<size_t>{} : inSplits)
        ->wait();
    std::vector<double> want;
    for (int j = 0; j < s; ++j) {
      for (size_t i = 0; i < outSplits[j]; ++i) want.push_back(msg(dt, j, r, s, i));
    }
    expectValues(
        bo, [&](size_t i) { return want[i]; },
        caseName(pg, even ? "alltoallSingle(even)" : "alltoallSingle(uneven)", dt, nullptr, c), s);
  }
  pg.barrier()->wait();
}

void pointToPoint(ProcessGroup& pg, const BackendParam& p, DataType dt, size_t c, int tag) {
  const int r = pg.rank(), s = pg.size();
  if (s < 2) return;
  {
    // Ring: send to the right, receive from the left, both in flight at once.
    Buffer out(p, c, dt), in(p, c, dt);
    fillPattern(out, r);
    SendRecvOptions so;
    so.tag = tag;
    auto ws = pg.send(out.tensor(), (r + 1) % s, so);
    auto wr = pg.recv(in.tensor(), (r + s - 1) % s, so);
    wr->wait();
    ws->wait();
    const int left = (r + s - 1) % s;
    expectValues(
        in, [&](size_t i) { return movementValue(dt, left, i); },
        caseName(pg, "send/recv ring", dt, nullptr, c), s);
  }
  {
    // Any source: rank 0 receives one message from every other rank, in arrival order.
    SendRecvOptions so;
    so.tag = tag + 1;
    if (r == 0) {
      std::set<int> seen;
      for (int k = 1; k < s; ++k) {
        Buffer in(p, c, dt);
        auto w = pg.recvAnySource(in.tensor(), so);
        w->wait();
        const int src = w->sourceRank();
        EXPECT_TRUE(src >= 1 && src < s) << "recvAnySource gave source " << src;
        seen.insert(src);
        expectValues(
            in, [&](size_t i) { return movementValue(dt, src, i); },
            caseName(pg, "recvAnySource", dt, nullptr, c), s);
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(s - 1));
    } else {
      Buffer out(p, c, dt);
      fillPattern(out, r);
      pg.send(out.tensor(), 0, so)->wait();
    }
  }
}

}  // namespace

void runSweep(ProcessGroup& pg, const BackendParam& p, const SweepOptions& o) {
  int round = 0;
  for (size_t c : o.counts) {
    for (DataType dt : o.dtypes.empty() ? allDataTypes() : o.dtypes) {
      if (o.reductions) reductions(pg, p, dt, c, o);
      if (o.dataMovement && wantedDtype(o, dt)) dataMovement(pg, p, dt, c, round);
      if (o.pointToPoint && wantedDtype(o, dt)) pointToPoint(pg, p, dt, c, 100 + 2 * round);
      ++round;
      if (::testing::Test::HasFailure()) return;  // the first failing case says enough
    }
  }
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
