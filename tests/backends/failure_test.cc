// Conformance: bad input (rank-local InvalidArgument before communicating, group still usable),
// a rank SIGKILLed mid-allreduce at 3, 4 and 8 ranks (CommError / TimeoutError on the others
// within the op timeout, then the group refuses new ops), an op timing out (TimeoutError naming op
// and seq), monitoredBarrier naming a missing rank, and shutdown with ops in flight (no hang, no
// crash).
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

class Failures : public ::testing::TestWithParam<BackendParam> {};

// "<op>: rank R of group G (size N): " -- how every argument error starts.
std::string argPrefix(const char* op, const ProcessGroup& pg) {
  return std::string(op) + ": rank " + std::to_string(pg.rank()) + " of group " + pg.name() +
         " (size " + std::to_string(pg.size()) + "): ";
}

// The "rank N" numbers a message names, other than `self`.
std::vector<int> peersNamed(const std::string& msg, int self) {
  std::vector<int> out;
  for (size_t at = msg.find("rank "); at != std::string::npos; at = msg.find("rank ", at + 5)) {
    size_t end = at + 5;
    while (end < msg.size() && std::isdigit(static_cast<unsigned char>(msg[end]))) ++end;
    if (end == at + 5) continue;
    const int r = std::stoi(msg.substr(at + 5, end - at - 5));
    if (r != self) out.push_back(r);
  }
  return out;
}

TEST_P(Failures, BadInputRaisesBeforeCommunicatingAndGroupStillWorks) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("bad-input");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    Buffer f(bp, 8, DataType::kFloat32), i(bp, 8, DataType::kInt32),
        big(bp, 16, DataType::kFloat32);
    const Tensor nullData(nullptr, 4, DataType::kFloat32, bp.device);
    const Tensor onCuda(f.host(), 8, DataType::kFloat32, Device::cuda(0));
    const uint64_t seqBefore = pg->sequenceNumber();
    const std::string ar = argPrefix("allreduce", *pg);
    expectThrowsWith<InvalidArgument>([&] { pg->allreduce(nullData); },
                                      {ar, "has null data with numel 4"});
    if (!pg->supportsDevice(Device::cuda(0))) {
      expectThrowsWith<InvalidArgument>([&] { pg->allreduce(onCuda); },
                                        {ar, "is on device cuda:0", pg->backendName()});
    }
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->allreduce(f.tensor(), AllreduceOptions{ReduceOp::BXOR, kUnsetTimeout});
        },
        {ar, "reduce op bxor is not defined on float tensors"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->broadcast(f.tensor(), BroadcastOptions{size, kUnsetTimeout});
        },
        {argPrefix("broadcast", *pg), "root rank 2 is out of range [0, 2)"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->broadcast(f.tensor(), BroadcastOptions{5, kUnsetTimeout});
        },
        {argPrefix("broadcast", *pg), "root rank 5 is out of range [0, 2)"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->reduce(f.tensor(), ReduceOptions{ReduceOp::SUM, -1, kUnsetTimeout});
        },
        {argPrefix("reduce", *pg), "root rank -1 is out of range [0, 2)"});
    const std::string ag = argPrefix("allgather", *pg);
    expectThrowsWith<InvalidArgument>([&] { pg->allgather({f.tensor()}, f.tensor()); },
                                      {ag, "has 1 tensors, expected 2 (one per rank)"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->allgather({f.tensor(), i.tensor()}, f.tensor());
        },
        {ag, "has dtype int32 but", "has dtype float"});
    expectThrowsWith<InvalidArgument>(
        [&] { pg->allgatherIntoTensor(f.tensor(), f.tensor()); },
        {argPrefix("allgather_into_tensor", *pg), "has 8 elements, expected 16"});
    expectThrowsWith<InvalidArgument>(
        [&] { pg->reduceScatterTensor(f.tensor(), f.tensor()); },
        {argPrefix("reduce_scatter_tensor", *pg), "has 8 elements, expected 16"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->alltoallSingle(f.tensor(), f.tensor(), {}, {3, 3});
        },
        {argPrefix("alltoall_single", *pg), "splits sum to 6 elements but", "has 8"});
    expectThrowsWith<InvalidArgument>([&] { pg->alltoallSingle(f.tensor(), i.tensor(), {}, {}); },
                                      {argPrefix("alltoall_single", *pg), "has dtype"});
    expectThrowsWith<InvalidArgument>(
        [&] { pg->send(f.tensor(), rank); },
        {argPrefix("send", *pg), "rank " + std::to_string(rank) + " is this rank itself"});
    expectThrowsWith<InvalidArgument>([&] { pg->recv(f.tensor(), 7); },
                                      {argPrefix("recv", *pg), "rank 7 is out of range [0, 2)"});
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->allreduce(f.tensor(), AllreduceOptions{ReduceOp::SUM, Milliseconds(-5)});
        },
        {ar, "timeout of -5 ms (must be >= 0"});
    EXPECT_EQ(pg->sequenceNumber(), seqBefore) << "a rejected op consumed a sequence number";
    // Nothing was sent: the group still works, in step on both ranks.
    fillInput(big, ReduceOp::SUM, rank);
    pg->allreduce(big.tensor())->wait();
    expectValues(
        big, [&](size_t k) { return reference(DataType::kFloat32, ReduceOp::SUM, size, k); },
        "allreduce after bad input", size);
  });
}

// Rank `victim` SIGKILLs itself right after issuing an allreduce; the others must fail with
// CommError naming it (or TimeoutError naming op and seq) within the op timeout, then refuse.
void killedRankCase(const BackendParam& bp, int ws, int victim) {
  const std::string path = uniqueTempPath("killed");
  const auto opTimeout = Milliseconds(3000);
  auto results = runRanks(
      ws,
      [&](int rank, int size) {
        // Setting up 8 ranks on a loaded 2-core CI machine may take longer than the op timeout:
        // the group (and its store) get a generous one, each allreduce the 3000 ms under test.
        auto pg = makeGroup(bp, path, rank, size, Milliseconds(60000));
        Buffer b(bp, 100003, DataType::kFloat32);
        constexpr int kBeforeKill = 20;
        Clock::time_point killedAround{};
        for (int it = 0;; ++it) {
          fillInput(b, ReduceOp::SUM, rank);
          if (it == kBeforeKill) killedAround = Clock::now();
          std::shared_ptr<Work> w;
          try {
            w = pg->allreduce(b.tensor(), AllreduceOptions{ReduceOp::SUM, opTimeout});
          } catch (const Error& e) {
            ADD_FAILURE() << "allreduce threw at issue: " << e.what();
            return;
          }
          if (rank == victim && it == kBeforeKill) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            ::raise(SIGKILL);
          }
          try {
            w->wait(Milliseconds(20000));
          } catch (const CommError& e) {
            const double s = std::chrono::duration<double>(Clock::now() - killedAround).count();
            EXPECT_GE(it, kBeforeKill);
            EXPECT_LT(s, 3.0 + 5.0) << "CommError came " << s << " s after the kill";
            // The error names the op and its sequence number (the group is fresh: op `it` is
            // #it), and the peer lost: the victim, or, on a rank that only talked to survivors,
            // the survivor that gave up (README: "throws CommError / TimeoutError naming op, seq
            // and peer").
            const std::string msg = e.what();
            EXPECT_TRUE(
                contains(msg, "allreduce #" + std::to_string(it) + " in group " + pg->name()))
                << "CommError does not name the op (allreduce #" << it << " in group " << pg->name()
                << "): " << msg;
            const std::vector<int> peers = peersNamed(msg, rank);
            EXPECT_FALSE(peers.empty()) << "CommError names no peer: " << msg;
            std::fprintf(stderr, "[rank %d] CommError after %.2f s: %s\n", rank, s, e.what());
            break;
          } catch (const TimeoutError& e) {
            const double s = std::chrono::duration<double>(Clock::now() - killedAround).count();
            EXPECT_LT(s, 3.0 + 5.0) << "TimeoutError came " << s << " s after the kill";
            EXPECT_TRUE(
                contains(e.what(), "allreduce #" + std::to_string(it) + " in group " + pg->name()))
                << e.what();
            EXPECT_TRUE(contains(e.what(), "3000 ms")) << e.what();
            std::fprintf(stderr, "[rank %d] TimeoutError after %.2f s: %s\n", rank, s, e.what());
            break;
          }
          ASSERT_LT(it, kBeforeKill + 50) << "no error long after rank " << victim << " died";
        }
        EXPECT_NE(pg->brokenError(), nullptr);
        // The group is unusable now and says so at once, with the error that broke it.
        expectThrowsWith<Error>(
            [&] { pg->allreduce(b.tensor()); },
            {"allreduce: process group " + pg->name() + " is unusable after an earlier error: "});
      },
      MultiProcOptions{std::chrono::seconds(60), nullptr});
  for (const auto& r : results) {
    if (r.rank == victim) {
      EXPECT_TRUE(!r.exited && r.signal == SIGKILL) << r.describe();
    } else {
      EXPECT_TRUE(r.ok()) << r.describe();
    }
  }
}

TEST_P(Failures, KilledRankBecomesCommErrorOnOthers) {
  killedRankCase(GetParam(), 3, 2);
}
TEST_P(Failures, KilledRankZeroBecomesCommErrorOnOthers) {
  killedRankCase(GetParam(), 4, 0);
}
TEST_P(Failures, KilledRankOfEightBecomesCommErrorOnOthers) {
  if (GetParam().maxWorldSize != 0 && GetParam().maxWorldSize < 8) GTEST_SKIP() << "needs 8 ranks";
  killedRankCase(GetParam(), 8, 5);
}

TEST_P(Failures, StuckOpTimesOutNamingOpAndSeq) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("timeout");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size, Milliseconds(20000));
    Buffer b(bp, 64, DataType::kInt32);
    fillInput(b, ReduceOp::SUM, rank);
    pg->allreduce(b.tensor())->wait();  // seq 0, both ranks
    if (rank == 0) {
      const auto start = Clock::now();
      auto w = pg->allreduce(b.tensor(), AllreduceOptions{ReduceOp::SUM, Milliseconds(1000)});
      expectThrowsWith<TimeoutError>([&] { w->wait(); },
                                     {"allreduce #1 in group " + pg->name(), "1000 ms"});
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      EXPECT_LT(s, 6.0);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // never joins seq 1
    }
  });
}

TEST_P(Failures, MonitoredBarrierNamesTheMissingRank) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("monitored");
  expectAllRanksOk(3, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    pg->monitoredBarrier(Milliseconds(20000));  // everyone arrives
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return;
    }
    // Rank 0 decides; rank 1 reports rank 0's verdict.
    expectThrowsWith<TimeoutError>(
        [&] { pg->monitoredBarrier(Milliseconds(1000)); },
        {"Rank 2 failed to pass monitoredBarrier in 1000 ms (group " + pg->name()});
  });
}

TEST_P(Failures, ShutdownWithOpsInFlightNeitherHangsNorCrashes) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("shutdown");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size, Milliseconds(5000));
    pg->barrier()->wait();  // both ranks connected before one of them shuts down
    std::vector<Buffer> bufs;
    std::vector<std::shared_ptr<Work>> works;
    for (int k = 0; k < 30; ++k) {
      bufs.emplace_back(bp, 200003, DataType::kFloat32);
      fillInput(bufs.back(), ReduceOp::SUM, rank);
    }
    // The peer may shut down while this rank is still issuing: an op issued after the group broke
    // raises at once (Error naming the earlier failure), which is as fine as failing later.
    auto issue = [&](const std::function<std::shared_ptr<Work>()>& op) {
      try {
        works.push_back(op());
      } catch (const Error&) {
      }
    };
    for (auto& b : bufs) issue([&] { return pg->allreduce(b.tensor()); });
    Buffer r(bp, 4, DataType::kInt32);
    issue([&] { return pg->recv(r.tensor(), 1 - rank, SendRecvOptions{99, kUnsetTimeout}); });
    const auto start = Clock::now();
    if (rank == 0) pg->shutdown();
    pg->shutdown();  // idempotent; on rank 1 the peer's shutdown shows up as failures
    for (auto& w : works) {
      try {
        w->wait(Milliseconds(15000));
      } catch (const TimeoutError& e) {
        ADD_FAILURE() << "op still pending after shutdown: " << e.what();
      } catch (const Error&) {
        // shut down, or the peer went away: either is fine
      }
      EXPECT_TRUE(w->isCompleted());
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 12.0);
    EXPECT_THROW(pg->allreduce(bufs[0].tensor())->wait(), Error);
    pg.reset();  // destructor after shutdown
  });
}

TEST_P(Failures, DestructorWithQueuedOpsDoesNotHang) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("dtor");
  expectAllRanksOk(2, [&](int rank, int size) {
    std::vector<std::shared_ptr<Work>> works;
    std::vector<Buffer> bufs;
    for (int k = 0; k < 10; ++k) bufs.emplace_back(bp, 100003, DataType::kInt64);
    {
      auto pg = makeGroup(bp, path, rank, size, Milliseconds(5000));
      // Both ranks fully connected first: a peer leaving during setup is a setup failure.
      pg->barrier()->wait();
      for (auto& b : bufs) {
        try {
          works.push_back(pg->allreduce(b.tensor()));
        } catch (const CommError& e) {
          // The peer destroyed its group while this rank still issued: an op failed on the lost
          // connection and the group refuses new ones, naming that error.
          EXPECT_NE(std::string(e.what()).find("unusable after an earlier error"),
                    std::string::npos)
              << e.what();
          break;
        }
      }
    }
    for (auto& w : works) {
      EXPECT_TRUE(w->isCompleted());
      w->exception();  // success, "shut down", or the peer's loss
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, Failures, ::testing::ValuesIn(conformanceBackends(4)),
                         [](const auto& info) { return info.param.label(); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Failures);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
