// Fault tolerance (docs/fault-tolerance.md): abort, revoke, agree and shrink on real forked ranks.
// A rank SIGKILLed in the middle of each kind of collective: the survivors fail promptly, revoke,
// agree on who failed and go on on a shrunken group whose allreduce is checked against a
// reference. A rank SIGSTOPped mid-op: a survivor revokes, every survivor's pending op fails with
// RevokedError long before its timeout; after SIGCONT the stopped rank is fenced (its ops fail,
// agree/shrink throw). agree() with a second rank dying during it. abort(). Backends without fault
// tolerance say so.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/store.h"
#include "tests/backends/conformance.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<BackendParam> ftBackends() {
  std::vector<BackendParam> out;
  for (auto& p : conformanceBackends(4))
    if (p.backend == "verbs") out.push_back(p);
  return out;
}

// The survivors' group: an allreduce (SUM of each survivor's inputValue under its original rank)
// checked against the sum computed here, on `survivors` (original ranks, ascending).
void checkShrunkenAllreduce(const BackendParam& bp, ProcessGroup& g, int origRank,
                            const std::vector<int>& survivors) {
  ASSERT_EQ(g.size(), static_cast<int>(survivors.size()));
  const int want =
      static_cast<int>(std::find(survivors.begin(), survivors.end(), origRank) - survivors.begin());
  ASSERT_EQ(g.rank(), want) << "ranks are renumbered in ascending order";
  Buffer b(bp, 4099, DataType::kFloat32);
  fillInput(b, ReduceOp::SUM, origRank);
  g.allreduce(b.tensor())->wait();
  expectValues(
      b,
      [&](size_t i) {
        double s = 0;
        for (int r : survivors) s += inputValue(DataType::kFloat32, ReduceOp::SUM, r, i);
        return s;
      },
      "allreduce on the shrunken group", g.size());
}

enum class Coll { kAllreduce, kBroadcast, kAllgather, kReduceScatter, kAlltoall, kBarrier };

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllreduce:
      return "allreduce";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kAllgather:
      return "allgather";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kAlltoall:
      return "alltoall";
    case Coll::kBarrier:
      return "barrier";
  }
  return "?";
}

void PrintTo(Coll c, std::ostream* os) {
  *os << collName(c);
}

// Issues one collective of kind `c` over buffers sized for `size` ranks.
std::shared_ptr<Work> issue(ProcessGroup& pg, Coll c, Buffer& in, Buffer& out, Milliseconds t) {
  const size_t n = in.numel() / static_cast<size_t>(pg.size());
  Tensor whole = in.tensor();
  Tensor chunk(in.host(), n, DataType::kFloat32, Device::cpu());
  switch (c) {
    case Coll::kAllreduce:
      return pg.allreduce(whole, AllreduceOptions{ReduceOp::SUM, t});
    case Coll::kBroadcast:
      return pg.broadcast(whole, BroadcastOptions{0, t});
    case Coll::kAllgather:
      return pg.allgatherIntoTensor(out.tensor(), chunk, AllgatherOptions{t});
    case Coll::kReduceScatter:
      return pg.reduceScatterTensor(Tensor(out.host(), n, DataType::kFloat32, Device::cpu()), whole,
                                    ReduceScatterOptions{ReduceOp::SUM, t});
    case Coll::kAlltoall:
      return pg.alltoallSingle(out.tensor(), whole, {}, {}, AllToAllOptions{t});
    case Coll::kBarrier:
      return pg.barrier(BarrierOptions{t});
  }
  return nullptr;
}

class FaultTolerance : public ::testing::TestWithParam<std::tuple<BackendParam, Coll>> {};

// Rank 2 of 4 SIGKILLs itself right after issuing a collective. Each survivor's op fails within a
// bound far below the op timeout (CommError naming the dead rank, or RevokedError where another
// survivor revoked first); each survivor then revokes, and its next op fails at once with
// RevokedError naming a survivor. agree() says rank 2 failed and ANDs the survivors' flags, the
// same on all; shrink() gives a group of three whose allreduce is right.
TEST_P(FaultTolerance, KilledRankMidCollectiveRevokeAgreeShrink) {
  const BackendParam bp = std::get<0>(GetParam());
  const Coll coll = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("ft-kill");
  constexpr int kVictim = 2, kBeforeKill = 5;
  const std::vector<int> survivors = {0, 1, 3};
  auto results = runRanks(
      4,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, Milliseconds(60000));
        const Milliseconds opTimeout(30000);  // never reached: the bound under test is 5 s
        Buffer in(bp, 4 * 50000, DataType::kFloat32), out(bp, 4 * 50000, DataType::kFloat32);
        fillInput(in, ReduceOp::SUM, rank);
        Clock::time_point killedAround{};
        for (int it = 0;; ++it) {
          if (it == kBeforeKill) killedAround = Clock::now();
          auto w = issue(*pg, coll, in, out, opTimeout);
          if (rank == kVictim && it == kBeforeKill) ::raise(SIGKILL);
          try {
            w->wait();
          } catch (const CommError& e) {
            const double s = secondsSince(killedAround);
            EXPECT_GE(it, kBeforeKill);
            EXPECT_LT(s, 5.0) << collName(coll) << " failed " << s
                              << " s after the kill: " << e.what();
            std::fprintf(stderr, "[rank %d] %s failed %.3f s after the kill\n", rank,
                         collName(coll), s);
            break;
          }
          ASSERT_LT(it, kBeforeKill + 3) << "no error after rank " << kVictim << " died";
        }
        pg->revoke("rank " + std::to_string(rank) + " saw a failure");
        EXPECT_TRUE(pg->revoked());
        const std::string err = expectThrowsWith<RevokedError>(
            [&] { issue(*pg, coll, in, out, opTimeout); }, {"was revoked by rank "});
        // The first revoker is a survivor, named with its reason.
        EXPECT_TRUE(contains(err, "saw a failure")) << err;
        try {
          issue(*pg, Coll::kAllreduce, in, out, opTimeout);
        } catch (const RevokedError& e) {
          EXPECT_NE(std::find(survivors.begin(), survivors.end(), e.revokerRank()), survivors.end())
              << e.what();
        }
        const uint64_t flags = ~(uint64_t(1) << rank);
        const auto a = pg->agree(flags);
        EXPECT_EQ(a.failed, std::vector<int>{kVictim});
        EXPECT_EQ(a.flags, ~uint64_t(0b1011)) << "the AND of the survivors' flags";
        auto small = pg->shrink();
        ASSERT_NE(small, nullptr);
        EXPECT_EQ(small->name(), pg->name() + "/shrink1");
        checkShrunkenAllreduce(bp, *small, rank, survivors);
      },
      MultiProcOptions{std::chrono::seconds(60), nullptr});
  for (const auto& r : results) {
    if (r.rank == kVictim) {
      EXPECT_TRUE(!r.exited && r.signal == SIGKILL) << r.describe();
    } else {
      EXPECT_TRUE(r.ok()) << r.describe();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Verbs, FaultTolerance,
    ::testing::Combine(::testing::ValuesIn(ftBackends()),
                       ::testing::Values(Coll::kAllreduce, Coll::kBroadcast, Coll::kAllgather,
                                         Coll::kReduceScatter, Coll::kAlltoall, Coll::kBarrier)),
    [](const ::testing::TestParamInfo<std::tuple<BackendParam, Coll>>& i) {
      return std::get<0>(i.param).label() + "_" + collName(std::get<1>(i.param));
    });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FaultTolerance);

class FaultToleranceBackend : public ::testing::TestWithParam<BackendParam> {};

// Rank 3 of 4 stops itself (SIGSTOP) right after issuing an allreduce: its peers see nothing
// wrong (the process lives, its connections stay open). Rank 0 revokes after 800 ms without
// progress; every survivor's pending allreduce fails with RevokedError naming rank 0 and the
// reason within 3 s of that (the op timeout is 60 s). shrink() declares rank 3 failed after
// C10D_FT_DETECT_MS (2.5 s here) and the three go on. Then the parent resumes rank 3: its pending
// op fails, a new op fails at once, and agree() / shrink() throw RevokedError: fenced.
// betweenOps: rank 3 stops after completing op #2 instead, and its peers' op #3 (one element) is
// the one that waits: on shm every peer has already written its part of #3 into shared memory
// when rank 3 wakes and issues #3, so only the fence at completion can fail it.
void stoppedRankCase(BackendParam bp, bool betweenOps) {
  bp.config["C10D_FT_DETECT_MS"] = "2500";  // a survivor on a loaded machine votes in time
  const std::string path = uniqueTempPath("ft-stop");
  const std::string shrunk = uniqueTempPath("ft-stop-shrunk");
  constexpr int kStopped = 3;
  MultiProcOptions opts{std::chrono::seconds(60), nullptr};
  opts.afterFork = [&](const std::vector<int>& pids) {
    // Resume rank 3 once the survivors have shrunk (bounded: the harness's own deadline would
    // kill everyone anyway).
    const auto until = Clock::now() + std::chrono::seconds(40);
    struct stat st;
    while (::stat(shrunk.c_str(), &st) != 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(pids[kStopped], SIGCONT);
  };
  expectAllRanksOk(
      4,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, Milliseconds(60000));
        Buffer big(bp, 100003, DataType::kFloat32);
        fillInput(big, ReduceOp::SUM, rank);
        const Tensor t(big.host(), betweenOps ? 1 : big.numel(), DataType::kFloat32, Device::cpu());
        if (rank == kStopped) {
          for (int it = 0; it < 3; ++it) pg->allreduce(t)->wait();
          if (betweenOps) {
            ::raise(SIGSTOP);
            const auto woke = Clock::now();
            try {
              auto w = pg->allreduce(t);
              expectThrowsWith<CommError>([&] { w->wait(); }, {});
            } catch (const CommError&) {
              // Refused at issue: the group is already known revoked here.
            }
            EXPECT_LT(secondsSince(woke), 3.0) << "the fenced rank's op took long to fail";
            expectThrowsWith<RevokedError>([&] { pg->shrink(); },
                                           {"rank 3 was declared failed", "fenced"});
            return;
          }
          auto w = pg->allreduce(t);
          const bool doneBefore = w->isCompleted();
          ::raise(SIGSTOP);
          // Woken after the survivors revoked and shrank without this rank.
          const auto woke = Clock::now();
          if (!doneBefore) {
            expectThrowsWith<CommError>([&] { w->wait(); }, {});
          }
          std::shared_ptr<Work> later;
          try {
            later = pg->allreduce(t);
            expectThrowsWith<CommError>([&] { later->wait(); }, {});
          } catch (const CommError&) {
            // Refused at issue: the group is already known revoked here.
          }
          EXPECT_LT(secondsSince(woke), 3.0) << "the fenced rank's op took long to fail";
          const std::string fenced = expectThrowsWith<RevokedError>(
              [&] { pg->shrink(); }, {"rank 3 was declared failed", "fenced"});
          expectThrowsWith<RevokedError>([&] { pg->allreduce(t); }, {});
          return;
        }
        for (int it = 0;; ++it) {
          ASSERT_LT(it, 20) << "rank " << kStopped << " was stopped but every op completed";
          auto w = pg->allreduce(t);
          const auto issued = Clock::now();
          while (!w->isCompleted() && secondsSince(issued) < 0.8)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          if (w->isCompleted()) {
            w->wait();
            continue;
          }
          const auto revokedAt = Clock::now();
          if (rank == 0) pg->revoke("rank 3 made no progress for 800 ms");
          const std::string msg = expectThrowsWith<RevokedError>(
              [&] { w->wait(); },
              {"allreduce #", "was revoked by rank 0: rank 3 made no progress for 800 ms"});
          EXPECT_LT(secondsSince(revokedAt), 3.0) << msg;
          std::fprintf(stderr, "[rank %d] pending allreduce failed %.3f s after the revoke: %s\n",
                       rank, secondsSince(revokedAt), msg.c_str());
          break;
        }
        const auto small = pg->shrink();
        checkShrunkenAllreduce(bp, *small, rank, {0, 1, 2});
        small->barrier()->wait();
        if (rank == 0) std::ofstream(shrunk) << "1";
      },
      opts);
}

TEST_P(FaultToleranceBackend, StoppedRankIsFencedAfterRevokeAndShrink) {
  stoppedRankCase(GetParam(), false);
}

TEST_P(FaultToleranceBackend, RankStoppedBetweenOpsIsFencedAfterRevokeAndShrink) {
  stoppedRankCase(GetParam(), true);
}

// agree() while a second rank dies: rank 3 is SIGKILLed first; then rank 2 dies either before it
// votes, or after voting while the others have not yet (so its vote may count). Ranks 0 and 1
// must return the same decision (compared through files), a second agree() names rank 2 too, and
// shrink() to the two survivors works.
void secondFailureDuringAgree(const BackendParam& bp, bool afterVote) {
  const std::string path = uniqueTempPath("ft-agree");
  const std::string out0 = uniqueTempPath("ft-agree-0"), out1 = uniqueTempPath("ft-agree-1");
  auto results = runRanks(
      4,
      [&](int rank, int size) {
        auto pg = makeGroup(bp, path, rank, size, Milliseconds(60000));
        Buffer b(bp, 1024, DataType::kFloat32);
        pg->allreduce(b.tensor())->wait();
        // Every rank has completed the allreduce before rank 3 dies (through the store: a peer
        // still reading rank 3's part when it dies would fail the op instead).
        pg->store()->set("test/done/" + std::to_string(rank), "1");
        if (rank == 3) {
          pg->store()->wait({"test/done/0", "test/done/1", "test/done/2", "test/done/3"});
          ::raise(SIGKILL);
        }
        const uint64_t flags = ~(uint64_t(1) << rank);
        if (rank == 2) {
          if (!afterVote) ::raise(SIGKILL);
          // Vote, then die while the others have not voted yet.
          std::thread([&] { (void)pg->agree(flags); }).detach();
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          ::raise(SIGKILL);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto a = pg->agree(flags);
        std::string s = std::to_string(a.flags) + ":";
        for (int f : a.failed) s += std::to_string(f) + ",";
        std::ofstream(rank == 0 ? out0 : out1) << s;
        EXPECT_TRUE(std::find(a.failed.begin(), a.failed.end(), 3) != a.failed.end()) << s;
        const bool twoCounted = std::find(a.failed.begin(), a.failed.end(), 2) == a.failed.end();
        EXPECT_EQ(a.flags, twoCounted ? ~uint64_t(0b111) : ~uint64_t(0b11)) << s;
        if (!afterVote) {
          EXPECT_FALSE(twoCounted) << "rank 2 never voted: " << s;
        }
        const auto again = pg->agree(~uint64_t(0));
        EXPECT_EQ(again.failed, (std::vector<int>{2, 3}));
        auto small = pg->shrink();
        checkShrunkenAllreduce(bp, *small, rank, {0, 1});
      },
      MultiProcOptions{std::chrono::seconds(60), nullptr});
  for (const auto& r : results) {
    if (r.rank >= 2) {
      EXPECT_TRUE(!r.exited && r.signal == SIGKILL) << r.describe();
    } else {
      EXPECT_TRUE(r.ok()) << r.describe();
    }
  }
  std::string a, b;
  std::ifstream(out0) >> a;
  std::ifstream(out1) >> b;
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b) << "the survivors agreed on different results";
}

TEST_P(FaultToleranceBackend, AgreeSameOnSurvivorsWhenSecondRankDiesBeforeVoting) {
  secondFailureDuringAgree(GetParam(), false);
}

TEST_P(FaultToleranceBackend, AgreeSameOnSurvivorsWhenSecondRankDiesAfterVoting) {
  secondFailureDuringAgree(GetParam(), true);
}

// abort(): rank 1 aborts with a recv pending (from rank 0, which never sends) while its peers wait
// for it in an allreduce. Its recv and later ops fail at once with the named error; the peers'
// allreduce fails with CommError within 3 s (op timeout 60 s).
TEST_P(FaultToleranceBackend, AbortFailsOwnOpsAndPeersPromptly) {
  const BackendParam bp = GetParam();
  const std::string path = uniqueTempPath("ft-abort");
  expectAllRanksOk(3, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size, Milliseconds(60000));
    Buffer b(bp, 100003, DataType::kFloat32);
    pg->allreduce(b.tensor())->wait();
    if (rank == 1) {
      auto w = pg->recv(b.tensor(), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const auto t = Clock::now();
      pg->abort("test abort");
      EXPECT_TRUE(pg->revoked());
      expectThrowsWith<CommError>([&] { w->wait(); }, {"aborted on rank 1: test abort"});
      expectThrowsWith<CommError>([&] { pg->allreduce(b.tensor()); },
                                  {"allreduce: ", "aborted on rank 1: test abort"});
      EXPECT_LT(secondsSince(t), 2.0);
      pg->abort("again");  // idempotent
      return;
    }
    const auto t = Clock::now();
    auto w = pg->allreduce(b.tensor());
    try {
      w->wait();
      ADD_FAILURE() << "allreduce completed though rank 1 never joined it";
    } catch (const CommError& e) {
      EXPECT_LT(secondsSince(t), 3.0 + 0.2) << e.what();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Verbs, FaultToleranceBackend, ::testing::ValuesIn(ftBackends()),
                         [](const ::testing::TestParamInfo<BackendParam>& i) {
                           return i.param.label();
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FaultToleranceBackend);

// A backend without fault tolerance says so, naming itself, and its group still works.
TEST(FaultToleranceUnsupported, GlooNamesItself) {
  if (!isBackendRegistered("gloo")) GTEST_SKIP() << "gloo backend not built";
  BackendParam bp;
  bp.backend = "gloo";
  const std::string path = uniqueTempPath("ft-gloo");
  expectAllRanksOk(1, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    EXPECT_FALSE(pg->supportsFaultTolerance());
    const std::vector<std::string> parts = {"the gloo backend", "does not support fault tolerance"};
    expectThrowsWith<Error>([&] { pg->revoke("x"); }, {"revoke: ", parts[0], parts[1]});
    expectThrowsWith<Error>([&] { pg->abort(); }, {"abort: ", parts[0], parts[1]});
    expectThrowsWith<Error>([&] { pg->agree(1); }, {"agree: ", parts[0], parts[1]});
    expectThrowsWith<Error>([&] { pg->shrink(); }, {"shrink: ", parts[0], parts[1]});
    Buffer b(bp, 8, DataType::kFloat32);
    pg->allreduce(b.tensor())->wait();
  });
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
