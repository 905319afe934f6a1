// Mismatched collectives: one rank calls a collective that does not match the others' (count,
// dtype, op, root, reduce op, per-rank sizes, a multi-tensor op's per-tensor sizes, a skipped op).
// Every rank's Work must fail with CollectiveMismatchError naming both descriptions, well before
// the op's timeout: never a hang, never silently wrong data, never a terminated process. Backends:
// verbs (shm and tcp) and gloo, each with its default settings (the check is always on); gloo's
// count mismatch has its own case (it must not kill the process). Plus the OpDesc value type itself
// and Work::desc().
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/core/broadcast_coalesced.h"
#include "c10d/core/op_desc.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;
// The op timeout: a detection that took this long would be the timeout, not the check.
constexpr Milliseconds kOpTimeout{30000};
constexpr Milliseconds kFastEnough{10000};

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

template <typename T>
Tensor tensorOf(std::vector<T>& v, DataType dt) {
  return Tensor(v.data(), v.size(), dt);
}

std::vector<BackendParam> mismatchBackends() {
  std::vector<BackendParam> out;
  for (const BackendParam& p : conformanceBackends()) {
    if (p.device == Device::cpu()) out.push_back(p);
  }
  return out;
}

std::vector<std::tuple<BackendParam, int>> cases(const std::vector<int>& sizes) {
  std::vector<std::tuple<BackendParam, int>> out;
  for (const auto& p : mismatchBackends())
    for (int ws : sizes) out.emplace_back(p, ws);
  return out;
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<BackendParam, int>>& info) {
  return paramName(std::get<0>(info.param), std::get<1>(info.param));
}

// Issues one op on `pg` (rank `rank` of `size`); returns its Work.
using Issue = std::function<std::shared_ptr<Work>(ProcessGroup& pg, int rank, int size)>;

// Every rank: a correct allreduce first (connections up), then `issue`; the Work must fail with
// CollectiveMismatchError within kFastEnough whose message holds every string of `needles`.
// `mayComplete` (ranks): their part of the op may finish before they can hear of the
// mismatch (a broadcast root only sends); then its next op must fail with the mismatch instead.
void expectMismatch(const BackendParam& bp, int ws, const Issue& issue,
                    const std::vector<std::string>& needles,
                    const std::vector<int>& mayComplete = {}) {
  const std::string path = uniqueTempPath("mismatch");
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, kOpTimeout);
        std::vector<float> warm(4, 1.0f);
        pg->allreduce(tensorOf(warm, DataType::kFloat32))->wait();
        ASSERT_EQ(warm[0], static_cast<float>(size));
        const auto start = Clock::now();
        try {
          issue(*pg, rank, size)->wait();
          if (std::find(mayComplete.begin(), mayComplete.end(), rank) == mayComplete.end()) {
            ADD_FAILURE() << "rank " << rank << ": the mismatched op completed without an error";
            return;
          }
          pg->allreduce(tensorOf(warm, DataType::kFloat32))->wait();
          ADD_FAILURE() << "rank " << rank << ": the op after a mismatched one completed";
        } catch (const CollectiveMismatchError& e) {
          const auto took = Clock::now() - start;
          EXPECT_LT(took, kFastEnough)
              << "rank " << rank << " took "
              << std::chrono::duration_cast<Milliseconds>(took).count() << " ms: " << e.what();
          for (const auto& n : needles)
            EXPECT_TRUE(contains(e.what(), n))
                << "rank " << rank << ": no '" << n << "' in: " << e.what();
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << rank
                        << ": expected CollectiveMismatchError, got: " << e.what();
        }
      },
      MultiProcOptions{Milliseconds(50000), nullptr});
}

class Mismatch : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {
 protected:
  const BackendParam& bp() const { return std::get<0>(GetParam()); }
  int ws() const { return std::get<1>(GetParam()); }
};

// Rank `bad` allreduces `badCount` floats, the others `count`.
void countCase(const BackendParam& bp, int ws, int bad, size_t count, size_t badCount) {
  expectMismatch(
      bp, ws,
      [=](ProcessGroup& pg, int rank, int) {
        static std::vector<float> v;
        v.assign(rank == bad ? badCount : count, 1.0f);
        return pg.allreduce(tensorOf(v, DataType::kFloat32));
      },
      {"allreduce #1", "rank " + std::to_string(bad) + " has float x " + std::to_string(badCount),
       "has float x " + std::to_string(count)});
}

TEST_P(Mismatch, CountOnRankOne) {
  countCase(bp(), ws(), 1, 1000, 2000);
}

TEST_P(Mismatch, CountOnLastRankSmallInline) {
  countCase(bp(), ws(), ws() - 1, 2, 3);
}

TEST_P(Mismatch, CountLarge) {
  countCase(bp(), ws(), 1, 300000, 200000);
}

TEST_P(Mismatch, Dtype) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int) {
                   static std::vector<int32_t> v;
                   v.assign(1000, 1);
                   return pg.allreduce(Tensor(v.data(), v.size(),
                                              rank == 1 ? DataType::kInt32 : DataType::kFloat32));
                 },
                 {"rank 1 has int32 x 1000", "has float x 1000"});
}

TEST_P(Mismatch, OpBroadcastVsAllreduce) {
  expectMismatch(
      bp(), ws(),
      [](ProcessGroup& pg, int rank, int) {
        static std::vector<float> v;
        v.assign(64, 1.0f);
        if (rank == 1) return pg.broadcast(tensorOf(v, DataType::kFloat32));
        return pg.allreduce(tensorOf(v, DataType::kFloat32));
      },
      {"rank 1 called broadcast (float x 64, root 0)", "called allreduce (float x 64, sum)"});
}

TEST_P(Mismatch, OpBarrierVsAllgather) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) -> std::shared_ptr<Work> {
                   static std::vector<std::vector<float>> out;
                   static std::vector<float> in;
                   if (rank == size - 1) return pg.barrier();
                   in.assign(8, 1.0f);
                   out.assign(size, std::vector<float>(8, 0.0f));
                   std::vector<Tensor> outs;
                   for (auto& o : out) outs.push_back(tensorOf(o, DataType::kFloat32));
                   return pg.allgather(outs, tensorOf(in, DataType::kFloat32));
                 },
                 {"called barrier (no data)", "called allgather (float x 8 per rank)"});
}

// Root 0's broadcast reaches a rank through ranks that all agree on root 0 (only the root sends,
// and in a tree of four a leaf may hear from rank 0's side alone): every rank but the one with
// the other root may finish with the right data; its next op must fail.
std::vector<int> everyRankBut(int r, int size) {
  std::vector<int> out;
  for (int q = 0; q < size; ++q)
    if (q != r) out.push_back(q);
  return out;
}

TEST_P(Mismatch, Root) {
  expectMismatch(
      bp(), ws(),
      [](ProcessGroup& pg, int rank, int) {
        static std::vector<float> v;
        v.assign(100, static_cast<float>(rank));
        BroadcastOptions o;
        o.rootRank = rank == 1 ? 1 : 0;
        return pg.broadcast(tensorOf(v, DataType::kFloat32), o);
      },
      {"rank 1 has float x 100, root 1", "has float x 100, root 0"}, everyRankBut(1, ws()));
}

TEST_P(Mismatch, ReduceOp) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int) {
                   static std::vector<float> v;
                   v.assign(10, 1.0f);
                   AllreduceOptions o;
                   o.reduceOp = rank == 1 ? ReduceOp::MAX : ReduceOp::SUM;
                   return pg.allreduce(tensorOf(v, DataType::kFloat32), o);
                 },
                 {"rank 1 has float x 10, max", "has float x 10, sum"});
}

TEST_P(Mismatch, AllgatherPerRankSize) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) {
                   static std::vector<float> in, out;
                   const size_t n = rank == 1 ? 5 : 4;
                   in.assign(n, 1.0f);
                   out.assign(n * size, 0.0f);
                   return pg.allgatherIntoTensor(tensorOf(out, DataType::kFloat32),
                                                 tensorOf(in, DataType::kFloat32));
                 },
                 {"rank 1 has float x 5 per rank", "has float x 4 per rank"});
}

TEST_P(Mismatch, AlltoallDtype) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) {
                   static std::vector<int32_t> in, out;
                   in.assign(2 * size, 1);
                   out.assign(2 * size, 0);
                   const DataType dt = rank == 1 ? DataType::kInt32 : DataType::kFloat32;
                   return pg.alltoallSingle(Tensor(out.data(), out.size(), dt),
                                            Tensor(in.data(), in.size(), dt), {}, {});
                 },
                 {"alltoall_single", "int32", "float"});
}

// The list forms: every output/input of a rank has its per-rank size, compared as the count.
TEST_P(Mismatch, AllgatherListPerRankSize) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) {
                   static std::vector<float> in;
                   static std::vector<std::vector<float>> out;
                   const size_t n = rank == 1 ? 5 : 4;
                   in.assign(n, 1.0f);
                   out.assign(size, std::vector<float>(n, 0.0f));
                   std::vector<Tensor> outs;
                   for (auto& o : out) outs.push_back(tensorOf(o, DataType::kFloat32));
                   return pg.allgather(outs, tensorOf(in, DataType::kFloat32));
                 },
                 {"allgather #1", "rank 1 has float x 5 per rank", "has float x 4 per rank"});
}

TEST_P(Mismatch, ReduceScatterListPerRankSize) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) {
                   static std::vector<float> out;
                   static std::vector<std::vector<float>> in;
                   const size_t n = rank == 1 ? 3 : 2;
                   out.assign(n, 0.0f);
                   in.assign(size, std::vector<float>(n, 1.0f));
                   std::vector<Tensor> ins;
                   for (auto& i : in) ins.push_back(tensorOf(i, DataType::kFloat32));
                   return pg.reduceScatter(tensorOf(out, DataType::kFloat32), ins);
                 },
                 {"reduce_scatter #1", "rank 1 has float x 3 per rank", "has float x 2 per rank"});
}

// allreduceCoalesced: rank `bad` passes tensors of sizes `badSizes`, the others `sizes` (the same
// total and number of tensors: only the per-tensor sizes differ, which used to reduce misaligned
// elements without an error).
void coalescedCase(const BackendParam& bp, int ws, int bad, const std::vector<size_t>& sizes,
                   const std::vector<size_t>& badSizes, const std::vector<std::string>& needles) {
  expectMismatch(
      bp, ws,
      [=](ProcessGroup& pg, int rank, int) {
        static std::vector<std::vector<float>> v;
        const std::vector<size_t>& mine = rank == bad ? badSizes : sizes;
        v.clear();
        std::vector<Tensor> ts;
        for (size_t n : mine) v.emplace_back(n, 1.0f);
        for (auto& t : v) ts.push_back(tensorOf(t, DataType::kFloat32));
        return pg.allreduceCoalesced(ts);
      },
      needles);
}

TEST_P(Mismatch, AllreduceCoalescedSizesSwapped) {
  coalescedCase(bp(), ws(), 1, {3, 5}, {5, 3},
                {"allreduce_coalesced #1", "tensor 0 differs", "has float x 3", "has float x 5",
                 "[3, 5]", "[5, 3]"});
}

TEST_P(Mismatch, AllreduceCoalescedSizesLastRankMiddleTensor) {
  coalescedCase(bp(), ws(), ws() - 1, {2, 2, 4}, {2, 4, 2},
                {"allreduce_coalesced #1", "tensor 1 differs", "rank " + std::to_string(ws() - 1),
                 "[2, 2, 4]", "[2, 4, 2]"});
}

// allgatherIntoTensor of inputs made of several tensors (AllgatherOptions::parts, the torch
// plugin's allgather_coalesced): rank 1 packs [5, 3] where the others pack [3, 5].
TEST_P(Mismatch, AllgatherIntoTensorPartsSizes) {
  expectMismatch(bp(), ws(),
                 [](ProcessGroup& pg, int rank, int size) {
                   static std::vector<float> in, out;
                   in.assign(8, static_cast<float>(rank));
                   out.assign(8 * static_cast<size_t>(size), 0.0f);
                   AllgatherOptions o;
                   o.parts = std::make_shared<const std::vector<uint64_t>>(
                       rank == 1 ? std::vector<uint64_t>{5, 3} : std::vector<uint64_t>{3, 5});
                   return pg.allgatherIntoTensor(tensorOf(out, DataType::kFloat32),
                                                 tensorOf(in, DataType::kFloat32), o);
                 },
                 {"allgather_into_tensor #1", "tensor 0 differs", "[3, 5]", "[5, 3]"});
}

// broadcastCoalesced flattens a bucket into one broadcast: rank 1 lays out its tensors
// differently. Ranks fed only by ranks agreeing with the root may complete with the right data
// (verbs); their next op must fail with the named mismatch.
TEST_P(Mismatch, BroadcastCoalescedSizes) {
  expectMismatch(
      bp(), ws(),
      [](ProcessGroup& pg, int rank, int) {
        static std::vector<std::vector<float>> v;
        const std::vector<size_t> mine =
            rank == 1 ? std::vector<size_t>{5, 3} : std::vector<size_t>{3, 5};
        v.clear();
        std::vector<Tensor> ts;
        for (size_t n : mine) v.emplace_back(n, static_cast<float>(rank));
        for (auto& t : v) ts.push_back(tensorOf(t, DataType::kFloat32));
        return broadcastCoalesced(pg, ts);
      },
      {"broadcast", "tensor 0 differs", "[3, 5]", "[5, 3]"}, everyRankBut(1, ws()));
}

INSTANTIATE_TEST_SUITE_P(Backends, Mismatch, ::testing::ValuesIn(cases({2, 3, 4})), caseName);

// Matching collectives keep working over many ops, with p2p between a pair of ranks interleaved
// (p2p counts in the group's sequence numbers but not in the collective count the check uses).
class MatchingSequence : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(MatchingSequence, ManyOpsStillCorrect) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("mismatch-ok");
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, kOpTimeout);
        const int iters = bp.backend == "gloo" ? 40 : 300;
        for (int it = 0; it < iters; ++it) {
          const size_t n = (it % 3 == 0) ? 20000 : 1 + it % 7;
          std::vector<float> v(n);
          for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(rank + i);
          auto w = pg->allreduce(tensorOf(v, DataType::kFloat32));
          const int root = it % size;
          std::vector<int32_t> b(3, rank == root ? it : -1);
          auto wb = pg->broadcast(Tensor(b.data(), b.size(), DataType::kInt32), {root});
          if (it % 5 == 0 && size > 1 && rank < 2) {
            std::vector<float> p(4, static_cast<float>(it));
            if (rank == 0)
              pg->send(tensorOf(p, DataType::kFloat32), 1)->wait();
            else
              pg->recv(tensorOf(p, DataType::kFloat32), 0)->wait();
            ASSERT_EQ(p[3], static_cast<float>(it));
          }
          if (it % 10 == 0) pg->barrier()->wait();
          w->wait();
          wb->wait();
          const float sum0 = static_cast<float>(size * (size - 1) / 2);
          ASSERT_EQ(v[0], sum0) << "iteration " << it;
          ASSERT_EQ(v[n - 1], sum0 + static_cast<float>(size * (n - 1))) << "iteration " << it;
          ASSERT_EQ(b[2], it) << "iteration " << it;
        }
        // The Work carries the op's description.
        std::vector<float> v(5, 1.0f);
        auto w = pg->allreduce(tensorOf(v, DataType::kFloat32), {ReduceOp::MAX});
        w->wait();
        EXPECT_EQ(w->desc().op, OpType::kAllreduce);
        EXPECT_EQ(w->desc().count, 5u);
        EXPECT_EQ(w->desc().describe(), "float x 5, max");
        EXPECT_EQ(w->desc().seq, w->sequenceNumber());
      },
      MultiProcOptions{Milliseconds(50000), nullptr});
}

INSTANTIATE_TEST_SUITE_P(Backends, MatchingSequence, ::testing::ValuesIn(cases({2, 3})), caseName);

// gloo: a count mismatch used to terminate the process (gloo::EnforceNotMet escaping Gloo's device
// thread). Now every rank's op fails with CollectiveMismatchError naming both counts, and the
// process lives on (the group too: a correct allreduce follows).
TEST(GlooDefaultMode, CountMismatchDoesNotKillTheProcess) {
  if (!isBackendRegistered("gloo")) GTEST_SKIP() << "gloo backend not built";
  BackendParam bp;
  for (const auto& p : conformanceBackends())
    if (p.backend == "gloo") bp = p;
  const std::string path = uniqueTempPath("mismatch-gloo");
  expectAllRanksOk(
      3,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, kOpTimeout);
        std::vector<float> v(rank == 1 ? 2000 : 1000, 1.0f);
        try {
          pg->allreduce(tensorOf(v, DataType::kFloat32))->wait();
          ADD_FAILURE() << "rank " << rank << ": the mismatched allreduce completed";
        } catch (const CollectiveMismatchError& e) {
          EXPECT_TRUE(contains(e.what(), "float x 1000")) << e.what();
          EXPECT_TRUE(contains(e.what(), "float x 2000")) << e.what();
        }
        std::vector<float> ok(7, 1.0f);
        pg->allreduce(tensorOf(ok, DataType::kFloat32))->wait();
        EXPECT_EQ(ok[6], static_cast<float>(size));
      },
      MultiProcOptions{Milliseconds(50000), nullptr});
}

// The shm barrier compares the top 44 bits of the hash summed over ranks: descriptions that
// differ in one field by a little (the usual bug: a neighbouring count, the next collective) must
// differ there, and no two of these thousands may share them.
TEST(OpDesc, HashTopBitsSeparateNearbyDescriptions) {
  OpDesc base;
  base.collSeq = 1000;
  base.op = OpType::kAllreduce;
  base.dtype = DataType::kFloat32;
  base.count = 4096;
  base.hasReduceOp = true;
  auto top = [](const OpDesc& d) { return d.hash() >> 20; };
  std::unordered_set<uint64_t> seen{top(base)};
  size_t made = 1;
  auto add = [&](const OpDesc& d) {
    ++made;
    EXPECT_TRUE(seen.insert(top(d)).second) << d.describeWithOp() << " #" << d.collSeq;
  };
  for (uint64_t k = 1; k <= 1000; ++k) {
    OpDesc d = base;
    d.collSeq = base.collSeq + k;
    add(d);
    d = base;
    d.count = base.count + k;
    add(d);
    d = base;
    d.count = base.count - k;
    add(d);
    d = base;
    d.tensors = k;
    add(d);
    d = base;
    d.collSeq = base.collSeq + k;
    d.count = base.count + k;
    add(d);
  }
  for (int r = 0; r < 64; ++r) {
    OpDesc d = base;
    d.root = r;
    add(d);
  }
  for (int op = 0; op < static_cast<int>(OpType::kUnknown); ++op) {
    if (op == static_cast<int>(OpType::kAllreduce)) continue;
    OpDesc d = base;
    d.op = static_cast<OpType>(op);
    add(d);
  }
  for (int t = 0; t < kNumDataTypes; ++t) {
    if (t == static_cast<int>(DataType::kFloat32)) continue;
    OpDesc d = base;
    d.dtype = static_cast<DataType>(t);
    add(d);
  }
  EXPECT_EQ(seen.size(), made);
}

// The value type: descriptions, the wire form and the message.
TEST(OpDesc, DescribeWireAndMessage) {
  OpDesc a;
  a.seq = 17;
  a.collSeq = 9;
  a.op = OpType::kAllreduce;
  a.dtype = DataType::kFloat32;
  a.count = 100;
  a.hasReduceOp = true;
  EXPECT_EQ(a.describe(), "float x 100, sum");
  OpDesc b = a;
  b.count = 200;
  EXPECT_NE(a.wire(), b.wire());
  EXPECT_NE(a.hash(), b.hash());
  OpDesc c = a;
  c.seq = 18;  // the group's seq is not compared (p2p ops count in it)
  EXPECT_EQ(a.wire(), c.wire());
  EXPECT_EQ(a.hash(), c.hash());
  EXPECT_EQ(OpDesc::fromWire(b.wire()).describe(), "float x 200, sum");
  EXPECT_EQ(mismatchMessage("verbs:world", 1, b, 0, OpDesc::fromWire(a.wire())),
            "allreduce #17 in group verbs:world: rank 0 has float x 100, sum; rank 1 has float x "
            "200, sum");
  OpDesc bc;
  bc.op = OpType::kBroadcast;
  bc.collSeq = 9;
  bc.count = 100;
  bc.root = 0;
  EXPECT_EQ(bc.describeWithOp(), "broadcast (float x 100, root 0)");
  EXPECT_TRUE(contains(mismatchMessage("g", 0, a, 2, bc),
                       "rank 0 called allreduce (float x 100, sum); rank 2 called broadcast"));
  EXPECT_EQ(sizeof(OpDesc::Wire), 32u);

  // A rank at another collective is a skew (one skipped or added a collective), classified by
  // the error's type, not its text; withMessage() (re-wrapping on other ranks) keeps it.
  OpDesc later = a;
  later.collSeq = 10;
  const CollectiveMismatchError skew = mismatchError("g", 0, a, 1, later, " (seen by rank 0)");
  EXPECT_TRUE(skew.skewed());
  EXPECT_TRUE(contains(skew.what(), "ranks are at different collectives")) << skew.what();
  EXPECT_TRUE(contains(skew.what(), "(seen by rank 0)")) << skew.what();
  EXPECT_FALSE(mismatchError("g", 1, b, 0, a, "").skewed());
  try {
    std::rethrow_exception(detail::prefixed(std::make_exception_ptr(skew), "rank 2 heard: "));
  } catch (const CollectiveMismatchError& e) {
    EXPECT_TRUE(e.skewed());
    EXPECT_TRUE(contains(e.what(), "rank 2 heard: allreduce #17")) << e.what();
  }
}

// Multi-tensor ops: the per-tensor sizes ride in the Wire as a hash; the message names the tensor.
TEST(OpDesc, PartsInWireAndMessage) {
  OpDesc a;
  a.seq = 5;
  a.collSeq = 4;
  a.op = OpType::kAllreduceCoalesced;
  a.count = 8;
  a.hasReduceOp = true;
  a.setParts({3, 5});
  EXPECT_EQ(a.tensors, 2u);
  EXPECT_EQ(a.describe(), "2 tensors, float x 8 in all, sizes [3, 5], sum");
  OpDesc b = a;
  b.setParts({5, 3});
  EXPECT_NE(a.partsHash(), 0u);
  EXPECT_NE(a.partsHash(), b.partsHash());
  EXPECT_NE(a.wire(), b.wire());
  EXPECT_TRUE(onlyPartsDiffer(a.wire(), b.wire()));
  OpDesc c = b;
  c.count = 9;
  EXPECT_FALSE(onlyPartsDiffer(a.wire(), c.wire()));
  EXPECT_FALSE(onlyPartsDiffer(a.wire(), a.wire()));
  EXPECT_EQ(OpDesc::fromWire(b.wire()).wire(), b.wire());
  EXPECT_TRUE(contains(OpDesc::fromWire(b.wire()).describe(), "sizes hashing to"));
  // A single-tensor op has no parts: its Wire is as before.
  OpDesc one;
  one.setParts({});
  EXPECT_EQ(one.partsHash(), 0u);
  EXPECT_EQ(partsMismatchMessage("gloo:world", 1, b, 0, a.parts()),
            "allreduce_coalesced #5 in group gloo:world: tensor 0 differs: rank 0 has float x 3, "
            "rank 1 has float x 5 (sizes: rank 0 [3, 5], rank 1 [5, 3]; 2 tensors, float x 8 in "
            "all, sum)");
  std::unordered_set<uint32_t> hashes;
  for (uint64_t i = 0; i <= 64; ++i) {
    OpDesc d;
    d.setParts({i, 64 - i});
    EXPECT_TRUE(hashes.insert(d.partsHash()).second) << i;
  }
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
