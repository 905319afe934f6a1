// Tests for ProcessGroup's non-virtual layer with a fake backend: argument validation (and that the
// backend is NOT called when it fails), sequence numbers, timeout resolution, the broken state and
// coalescing.
#include "c10d/core/process_group.h"

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>

#include "c10d/base/abi.h"
#include "c10d/store/hash_store.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using std::chrono::milliseconds;
using test::backendSide;
using test::FakeProcessGroup;

class ProcessGroupTest : public ::testing::Test {
 protected:
  // Rank 1 of a group of 4, group timeout 1234 ms.
  void SetUp() override { pg_ = make(1, 4); }

  static std::shared_ptr<FakeProcessGroup> make(int rank, int size) {
    ProcessGroup::Options o;
    o.timeout = milliseconds(1234);
    return std::make_shared<FakeProcessGroup>(std::make_shared<HashStore>(), rank, size, o);
  }

  // `fn` must throw InvalidArgument whose message contains every piece; the backend must not
  // have been called and no sequence number consumed.
  void expectInvalid(const std::function<void()>& fn, std::initializer_list<std::string> pieces) {
    const auto callsBefore = pg_->calls().size();
    const auto seqBefore = pg_->sequenceNumber();
    try {
      fn();
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      for (const auto& p : pieces)
        EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
      EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
      EXPECT_NE(msg.find("fake:world"), std::string::npos) << msg;
    }
    EXPECT_EQ(pg_->calls().size(), callsBefore) << "backend called despite invalid arguments";
    EXPECT_EQ(pg_->sequenceNumber(), seqBefore);
  }

  std::shared_ptr<FakeProcessGroup> pg_;
  std::vector<float> a_ = std::vector<float>(8), b_ = std::vector<float>(8);
  std::vector<float> big_ = std::vector<float>(32);
  Tensor t() { return tensorOf(a_.data(), a_.size()); }
  Tensor u() { return tensorOf(b_.data(), b_.size()); }
  Tensor big() { return tensorOf(big_.data(), big_.size()); }
  std::vector<Tensor> four() { return {t(), u(), t(), u()}; }
};

TEST_F(ProcessGroupTest, Basics) {
  EXPECT_EQ(pg_->rank(), 1);
  EXPECT_EQ(pg_->size(), 4);
  EXPECT_EQ(pg_->name(), "fake:world");
  EXPECT_EQ(pg_->sequenceNumber(), 0u);
  EXPECT_THROW(make(4, 4), InvalidArgument);
  EXPECT_THROW(make(-1, 4), InvalidArgument);
  EXPECT_THROW(make(0, 0), InvalidArgument);
}

TEST_F(ProcessGroupTest, NullDataAndDevice) {
  Tensor null(nullptr, 5, DataType::kFloat32);
  expectInvalid([&] { pg_->broadcast(null); }, {"broadcast", "null data", "numel 5"});
  expectInvalid([&] { pg_->allreduce(null); }, {"allreduce", "null data"});
  Tensor gpu(a_.data(), 8, DataType::kFloat32, Device::cuda(0));
  expectInvalid([&] { pg_->allreduce(gpu); }, {"cuda:0", "does not support"});
  expectInvalid([&] { pg_->send(gpu, 2); }, {"send", "cuda:0"});
  // Zero elements with null data are fine.
  EXPECT_NO_THROW(pg_->allreduce(Tensor(nullptr, 0, DataType::kFloat32))->wait());
}

TEST_F(ProcessGroupTest, RootOutOfRange) {
  BroadcastOptions bo;
  bo.rootRank = 4;
  expectInvalid([&] { pg_->broadcast(t(), bo); }, {"broadcast", "root rank 4", "[0, 4)"});
  ReduceOptions ro;
  ro.rootRank = -1;
  expectInvalid([&] { pg_->reduce(t(), ro); }, {"reduce", "root rank -1"});
  GatherOptions go;
  go.rootRank = 7;
  expectInvalid([&] { pg_->gather({}, t(), go); }, {"gather", "root rank 7"});
  ScatterOptions so;
  so.rootRank = 9;
  expectInvalid([&] { pg_->scatter(t(), {}, so); }, {"scatter", "root rank 9"});
}

TEST_F(ProcessGroupTest, ReduceOpSupport) {
  AllreduceOptions o;
  o.reduceOp = ReduceOp::BXOR;
  expectInvalid([&] { pg_->allreduce(t(), o); }, {"bxor", "not defined", "float"});
  std::vector<uint16_t> h(4);
  Tensor bf(h.data(), 4, DataType::kBFloat16);
  o.reduceOp = ReduceOp::PRODUCT;
  expectInvalid([&] { pg_->allreduce(bf, o); },
                {"backend fake does not support", "prod", "bfloat16"});
  ReduceScatterOptions rso;
  rso.reduceOp = ReduceOp::BAND;
  expectInvalid([&] { pg_->reduceScatterTensor(t(), big(), rso); },
                {"reduce_scatter_tensor", "band"});
  o.reduceOp = static_cast<ReduceOp::Kind>(42);
  expectInvalid([&] { pg_->allreduce(t(), o); }, {"invalid reduce op"});
  std::vector<int32_t> ints(4);
  o.reduceOp = ReduceOp::BXOR;
  EXPECT_NO_THROW(pg_->allreduce(tensorOf(ints.data(), 4), o));
}

TEST_F(ProcessGroupTest, ListSizesAndNumels) {
  expectInvalid(
      [&] {
        pg_->allgather({t(), t(), t()}, t());
      },
      {"allgather", "outputs has 3 tensors, expected 4"});
  std::vector<float> small(7);
  expectInvalid(
      [&] {
        pg_->allgather({t(), t(), tensorOf(small.data(), 7), t()}, t());
      },
      {"outputs[2] has 7 elements, expected 8"});
  std::vector<double> d(8);
  expectInvalid(
      [&] {
        pg_->allgather({t(), tensorOf(d.data(), 8), t(), t()}, t());
      },
      {"outputs[1] has dtype double", "input has dtype float"});
  expectInvalid([&] { pg_->allgatherIntoTensor(t(), t()); },
                {"allgather_into_tensor", "output has 8 elements, expected 32"});
  expectInvalid(
      [&] {
        pg_->reduceScatter(t(), {t(), t()});
      },
      {"reduce_scatter", "inputs has 2 tensors, expected 4"});
  expectInvalid([&] { pg_->reduceScatterTensor(t(), t()); },
                {"reduce_scatter_tensor", "input has 8 elements, expected 32"});
  expectInvalid(
      [&] {
        pg_->alltoall({t(), t(), t(), t()}, {t()});
      },
      {"alltoall", "inputs has 1 tensors"});
  expectInvalid([&] { pg_->allreduceCoalesced({}); }, {"allreduce_coalesced", "no tensors"});
  expectInvalid(
      [&] {
        pg_->allreduceCoalesced({t(), tensorOf(d.data(), 8)});
      },
      {"tensors[1] has dtype double"});
  Tensor gpu(a_.data(), 8, DataType::kFloat32, Device::cuda(1));
  expectInvalid([&] { pg_->allgatherIntoTensor(gpu, t()); }, {"cuda:1"});
}

TEST_F(ProcessGroupTest, OutOfPlaceArguments) {
  // Partial overlap, numel, dtype: InvalidArgument naming output and input.
  Tensor lo = tensorOf(big_.data(), 8), hi = tensorOf(big_.data() + 4, 8);
  expectInvalid([&] { pg_->allreduceInto(hi, lo); },
                {"allreduce", "output (32 bytes at", "partly overlaps input"});
  expectInvalid([&] { pg_->allreduceInto(t(), big()); },
                {"output has 8 elements, expected 32 (the input's numel)"});
  std::vector<double> d(8);
  expectInvalid([&] { pg_->allreduceInto(tensorOf(d.data(), 8), t()); },
                {"output has dtype double", "input has dtype float"});
  ReduceOptions ro;
  ro.rootRank = 1;  // this rank: its output is checked
  expectInvalid([&] { pg_->reduceInto(lo, hi, ro); }, {"reduce", "partly overlaps input"});
  expectInvalid([&] { pg_->reduceInto(Tensor{}, t(), ro); }, {"reduce", "output has"});
  // Touching but disjoint is fine; so is the same memory (in place).
  EXPECT_NO_THROW(pg_->allreduceInto(tensorOf(big_.data() + 8, 8), lo)->wait());
  EXPECT_NO_THROW(pg_->allreduceInto(t(), t())->wait());
}

TEST_F(ProcessGroupTest, OutputsThatPartlyOverlapAnInputAreRefused) {
  // big_ as four 8-element blocks; this is rank 1 of 4. `skewed` straddles blocks 0 and 1.
  auto block = [&](size_t k) { return tensorOf(big_.data() + 8 * k, 8); };
  const Tensor skewed = tensorOf(big_.data() + 4, 8);
  const std::vector<Tensor> blocks = {block(0), block(1), block(2), block(3)};
  expectInvalid([&] { pg_->allgather(blocks, skewed); },
                {"allgather", "outputs[0] (32 bytes at", "partly overlaps input"});
  expectInvalid([&] { pg_->allgatherIntoTensor(big(), skewed); },
                {"allgather_into_tensor", "input (32 bytes at", "partly overlaps output",
                 "pass its block 1"});
  expectInvalid([&] { pg_->allgatherIntoTensor(big(), block(0)); }, {"partly overlaps output"});
  expectInvalid([&] { pg_->reduceScatterTensor(skewed, big()); }, {"partly overlaps input"});
  expectInvalid([&] { pg_->reduceScatter(skewed, blocks); },
                {"output", "partly overlaps inputs[0]"});
  expectInvalid([&] { pg_->alltoallSingle(skewed, block(0), {}, {}); }, {"partly overlaps input"});
  ScatterOptions so;
  so.rootRank = 1;
  expectInvalid([&] { pg_->scatter(skewed, blocks, so); }, {"scatter", "partly overlaps inputs"});
  GatherOptions go;
  go.rootRank = 1;
  expectInvalid([&] { pg_->gather(blocks, skewed, go); }, {"gather", "outputs[0]"});
  // In place: this rank's block of the larger tensor, or the same memory.
  EXPECT_NO_THROW(pg_->allgatherIntoTensor(big(), block(1))->wait());
  EXPECT_NO_THROW(pg_->reduceScatterTensor(block(1), big())->wait());
  EXPECT_NO_THROW(pg_->allgather(blocks, block(1))->wait());
  EXPECT_NO_THROW(pg_->reduceScatter(block(1), blocks)->wait());
}

TEST_F(ProcessGroupTest, OutOfPlaceIsTheSameCollective) {
  // The default copies input into output and runs the in-place op: the backend sees allreduce /
  // reduce with the output, and the sequence numbers go on as for any op.
  for (size_t i = 0; i < a_.size(); ++i) a_[i] = static_cast<float>(i + 1);
  auto w = pg_->allreduceInto(u(), t());
  w->wait();
  EXPECT_EQ(b_, a_);
  EXPECT_EQ(w->desc().op, OpType::kAllreduce);
  EXPECT_EQ(w->desc().count, 8u);
  ReduceOptions ro;
  ro.rootRank = 2;  // not this rank: no output needed, none written
  std::fill(b_.begin(), b_.end(), -1.0f);
  pg_->reduceInto(Tensor{}, t(), ro)->wait();
  EXPECT_EQ(b_[0], -1.0f);
  ro.rootRank = 1;
  pg_->reduceInto(u(), t(), ro)->wait();
  EXPECT_EQ(b_, a_);
  const auto calls = pg_->calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].op, OpType::kAllreduce);
  EXPECT_EQ(calls[1].op, OpType::kReduce);
  EXPECT_EQ(calls[2].op, OpType::kReduce);
  EXPECT_EQ(pg_->sequenceNumber(), 3u);
}

TEST_F(ProcessGroupTest, GatherScatterRootOnlyLists) {
  // Rank 1 is not the root (0): outputs must be empty.
  expectInvalid([&] { pg_->gather(four(), t()); }, {"gather", "non-root", "root is 0"});
  expectInvalid([&] { pg_->scatter(t(), four()); }, {"scatter", "non-root"});
  EXPECT_NO_THROW(pg_->gather({}, t()));
  EXPECT_NO_THROW(pg_->scatter(t(), {}));
  GatherOptions go;
  go.rootRank = 1;
  expectInvalid([&] { pg_->gather({}, t(), go); }, {"outputs (on the root) has 0 tensors"});
  ScatterOptions so;
  so.rootRank = 1;
  expectInvalid([&] { pg_->scatter(t(), {t()}, so); }, {"inputs (on the root) has 1 tensors"});
  EXPECT_NO_THROW(pg_->gather(four(), t(), go));
  EXPECT_NO_THROW(pg_->scatter(t(), four(), so));
}

TEST_F(ProcessGroupTest, AlltoallSingleSplits) {
  expectInvalid(
      [&] {
        pg_->alltoallSingle(big(), big(), {}, {8, 8, 8, 7});
      },
      {"alltoall_single", "input splits sum to 31", "32"});
  expectInvalid(
      [&] {
        pg_->alltoallSingle(big(), big(), {1, 2}, {});
      },
      {"output splits have 2 entries, expected 4"});
  std::vector<float> odd(30);
  expectInvalid([&] { pg_->alltoallSingle(big(), tensorOf(odd.data(), 30), {}, {}); },
                {"30 elements, not divisible by group size 4"});
  pg_->alltoallSingle(big(), big(), {}, {}).get()->wait();
  EXPECT_EQ(pg_->lastInputSplits, (std::vector<size_t>{8, 8, 8, 8}));
  EXPECT_EQ(pg_->lastOutputSplits, (std::vector<size_t>{8, 8, 8, 8}));
  pg_->alltoallSingle(big(), big(), {0, 2, 10, 20}, {30, 2, 0, 0});
  EXPECT_EQ(pg_->lastOutputSplits, (std::vector<size_t>{0, 2, 10, 20}));
  // This rank's (1) own block: it would receive 2 elements from itself but send itself 0.
  expectInvalid(
      [&] {
        pg_->alltoallSingle(big(), big(), {0, 2, 10, 20}, {32, 0, 0, 0});
      },
      {"alltoall_single", "rank 1 receives 2 elements from itself", "sends itself 0"});
  std::vector<float> three(3);
  expectInvalid(
      [&] {
        pg_->alltoall({t(), tensorOf(three.data(), 3), t(), t()}, {t(), t(), t(), t()});
      },
      {"alltoall", "rank 1 receives 3 elements from itself (outputs[1])",
       "sends itself 8 (inputs[1])"});
}

TEST_F(ProcessGroupTest, PointToPointPeers) {
  expectInvalid([&] { pg_->send(t(), 1); }, {"send", "destination rank 1 is this rank"});
  expectInvalid([&] { pg_->send(t(), 4); }, {"destination rank 4 is out of range"});
  expectInvalid([&] { pg_->recv(t(), -1); }, {"recv", "source rank -1 is out of range"});
  expectInvalid([&] { pg_->recv(t(), 1); }, {"source rank 1 is this rank"});
  pg_->recv(t(), 3);
  EXPECT_EQ(pg_->lastSrcRank, 3);
  pg_->recvAnySource(t());
  EXPECT_EQ(pg_->lastSrcRank, -1);
  EXPECT_EQ(pg_->calls().back().op, OpType::kRecvAnySource);
}

TEST_F(ProcessGroupTest, NegativeTimeout) {
  BarrierOptions o;
  o.timeout = milliseconds(-5);
  expectInvalid([&] { pg_->barrier(o); }, {"barrier", "timeout of -5 ms"});
}

TEST_F(ProcessGroupTest, SequenceNumbersAndTimeouts) {
  pg_->allreduce(t());
  AllreduceOptions o;
  o.timeout = milliseconds(55);
  pg_->allreduce(t(), o);
  pg_->barrier();
  pg_->send(t(), 0);
  auto calls = pg_->calls();
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].seq, i);
  EXPECT_EQ(calls[0].timeout, milliseconds(1234));
  EXPECT_EQ(calls[1].timeout, milliseconds(55));
  EXPECT_EQ(calls[2].op, OpType::kBarrier);
  EXPECT_EQ(pg_->sequenceNumber(), 4u);
}

TEST_F(ProcessGroupTest, BrokenGroupThrowsOriginalType) {
  pg_->setBroken(std::make_exception_ptr(CommError("rank 2 closed the connection")));
  pg_->setBroken(std::make_exception_ptr(TimeoutError("later, ignored")));
  ASSERT_NE(pg_->brokenError(), nullptr);
  try {
    pg_->allreduce(t());
    FAIL();
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "process group fake:world is unusable after an earlier error: rank 2 closed"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(pg_->calls().empty());
  EXPECT_EQ(pg_->sequenceNumber(), 0u);
  // Validation still comes first.
  expectInvalid([&] { pg_->send(t(), 1); }, {"this rank"});

  auto pg2 = make(0, 2);
  pg2->setBroken(std::make_exception_ptr(TimeoutError("watchdog: allreduce #3 timed out")));
  EXPECT_THROW(pg2->barrier(), TimeoutError);
  auto pg3 = make(0, 2);
  pg3->setBroken(std::make_exception_ptr(std::runtime_error("odd")));
  try {
    pg3->barrier();
    FAIL();
  } catch (const CommError&) {
    FAIL() << "must not be CommError";
  } catch (const TimeoutError&) {
    FAIL() << "must not be TimeoutError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd"), std::string::npos);
  }
}

TEST_F(ProcessGroupTest, Coalescing) {
  EXPECT_FALSE(pg_->isCoalescing());
  EXPECT_THROW(pg_->endCoalescing(), InvalidArgument);
  pg_->pendingWorks = true;
  pg_->startCoalescing();
  EXPECT_TRUE(pg_->isCoalescing());
  EXPECT_EQ(pg_->coalescingStarts, 1);
  EXPECT_THROW(pg_->startCoalescing(), InvalidArgument);
  auto w1 = pg_->allreduce(t());
  auto w2 = pg_->broadcast(u());
  auto c = pg_->endCoalescing();
  EXPECT_FALSE(pg_->isCoalescing());
  EXPECT_EQ(c->opType(), OpType::kCoalesced);
  EXPECT_EQ(c->sequenceNumber(), 2u);
  EXPECT_EQ(pg_->sequenceNumber(), 3u);
  EXPECT_FALSE(c->isCompleted());
  backendSide(w2)->finish();
  EXPECT_FALSE(c->isCompleted());
  backendSide(w1)->finish(std::make_exception_ptr(CommError("peer 0 died")));
  ASSERT_TRUE(c->isCompleted());
  EXPECT_THROW(c->wait(), CommError);
  // Works after endCoalescing are not collected into the next coalesced group.
  pg_->barrier();
  pg_->startCoalescing();
  auto empty = pg_->endCoalescing();
  EXPECT_TRUE(empty->isSuccess());
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
