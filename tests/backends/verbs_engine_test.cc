// The verbs collective engine: where an op's body runs (the caller's stack, the engine's fiber on
// the caller's thread, the engine thread), issue order, catching up without waiting for a late
// peer, the flight record of ops completed inline, and the two extremes of the engine settings
// through the conformance sweep.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/collective_engine.h"
#include "c10d/backends/verbs/fault_hooks.h"
#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/base/abi.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/group_diagnostics.h"
#include "tests/backends/conformance.h"
#include "tests/backends/verbs_test_util.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

using test::expectAllRanksOk;
using test::uniqueTempPath;

// The engine's two extremes: every op through the engine thread (no fast path), and every inline
// op handed off at its first wait (the fiber moves threads mid-op, over shm and tcp).
// Where a body runs: a small op of a group of one on the caller's own stack (no fiber, no hand-off
// possible); of a larger group on the engine's fiber, still on the caller's thread; a large op on
// the engine thread. Each completes in issue order, the small ones before submit() returns.
TEST(VerbsEngine, PeerlessSmallOpsRunOnTheCallersStack) {
  struct Seen {
    std::thread::id thread;
    const char* frame = nullptr;
    bool handoff = false;
    bool inlined = false;
  };
  auto where = [](Seen* seen) {
    return [seen](Handoff* h) -> std::exception_ptr {
      char local = 0;
      seen->thread = currentThread();
      seen->frame = &local;
      seen->handoff = h != nullptr;
      seen->inlined = h != nullptr && h->inlined();
      return nullptr;
    };
  };
  char callerFrame = 0;
  auto nearCaller = [&](const char* p) {  // within 64 KiB of this frame: the caller's stack
    const auto d = p > &callerFrame ? p - &callerFrame : &callerFrame - p;
    return d < (64 << 10);
  };
  for (bool peerless : {true, false}) {
    SCOPED_TRACE(peerless ? "peerless" : "two ranks");
    CollectiveEngine engine("test", 4096, 100, peerless);
    Seen small, large;
    auto w1 = std::make_shared<BackendWork>(OpType::kAllreduce, 1, "test");
    engine.submit(w1, 64, Clock::now(), where(&small));
    EXPECT_TRUE(w1->isCompleted());
    EXPECT_EQ(small.thread, std::this_thread::get_id());
    EXPECT_TRUE(small.handoff);
    EXPECT_EQ(small.inlined, !peerless);  // only the fiber may hand itself off
    EXPECT_EQ(nearCaller(small.frame), peerless) << "the body ran on the wrong stack";
    auto w2 = std::make_shared<BackendWork>(OpType::kAllreduce, 2, "test");
    engine.submit(w2, 1 << 20, Clock::now(), where(&large));
    EXPECT_TRUE(w2->wait(std::chrono::seconds(10)));
    EXPECT_NE(large.thread, std::this_thread::get_id());
    EXPECT_FALSE(large.handoff);
    auto w3 = std::make_shared<BackendWork>(OpType::kAllreduce, 3, "test");
    engine.submit(w3, 8, Clock::now(), [](Handoff*) -> std::exception_ptr {
      return std::make_exception_ptr(CommError("peer 1 gone"));
    });
    EXPECT_THROW(w3->wait(std::chrono::seconds(10)), CommError);
  }
}

TEST(VerbsEngine, EveryOpThroughTheEngineThread) {
  sweepWith(3, {{"C10D_INLINE_BYTES", "0"}}, {0, 1, 7, 20011});
}
// C10D_INLINE_US=-1: small ops run on the caller's stack and never hand off, so a late peer
// holds the caller (the synchronous engine), and the results are the same.
TEST(VerbsEngine, DirectOpsNeverHandOff) {
  sweepWith(3, {{"C10D_INLINE_US", "-1"}}, {0, 1, 7, 20011});
  const std::string path = uniqueTempPath("verbs-direct");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_INLINE_US", "-1"}});
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    float x = 1.0f + rank;
    const auto t0 = std::chrono::steady_clock::now();
    auto w = pg->allreduce(tensorOf(&x, 1));
    const auto held = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(w->isCompleted()) << "rank " << rank << ": a direct op returned pending";
    if (rank == 0) {
      EXPECT_GE(held, std::chrono::milliseconds(200)) << "rank 0 was not held by its late peer";
    }
    w->wait();
    EXPECT_EQ(x, 3.0f);
  });
}

// The flight record of ops run inline: one completed where it was issued records its start (the
// issue time) with its end; one handed off to the engine thread (its peer joins only after rank 0
// looked) reads as started while it waits.
TEST(VerbsEngine, FlightRecordOfInlineOps) {
  const std::string path = uniqueTempPath("verbs-record");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_INLINE_US", "100"}});
    pg->barrier()->wait();
    float x = 1.0f + rank;
    pg->allreduce(tensorOf(&x, 1))->wait();
    ASSERT_EQ(x, 3.0f);
    // Rank 1 joins the second op only once rank 0 has looked at its record.
    const std::string checked = path + ".checked";
    if (rank == 1) {
      for (int i = 0; i < 3000 && access(checked.c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_EQ(access(checked.c_str(), F_OK), 0) << "rank 0 never looked at its record";
    }
    float y = 1.0f + rank;
    auto w = pg->allreduce(tensorOf(&y, 1));
    if (rank == 0) {
      // allreduce() returned after 100 us of polling, handing the op to the engine thread.
      ASSERT_FALSE(w->isCompleted()) << "the op completed without its peer";
      const auto snap = pg->diagnostics().recorder().snapshot();
      ASSERT_GE(snap.size(), 3u);
      const auto& pending = snap.back();
      EXPECT_EQ(pending.desc.op, OpType::kAllreduce);
      EXPECT_EQ(pending.state, FlightRecorder::State::kStarted)
          << "an op handed off reads as " << FlightRecorder::toString(pending.state);
      EXPECT_EQ(pending.startNs, pending.issueNs) << "started as it was issued";
      EXPECT_EQ(pending.endNs, 0);
      // The op before it completed inline: start and end recorded together.
      const auto& done = snap[snap.size() - 2];
      EXPECT_EQ(done.desc.op, OpType::kAllreduce);
      EXPECT_EQ(done.state, FlightRecorder::State::kCompleted);
      EXPECT_EQ(done.startNs, done.issueNs);
      EXPECT_GE(done.endNs, done.startNs);
      EXPECT_GT(done.startNs, 0);
      std::fclose(std::fopen(checked.c_str(), "w"));
    }
    w->wait();
    EXPECT_EQ(y, 3.0f);
    const auto last = pg->diagnostics().recorder().snapshot().back();
    EXPECT_EQ(last.state, FlightRecorder::State::kCompleted);
    EXPECT_EQ(last.startNs, last.issueNs);
    EXPECT_GE(last.endNs, last.startNs);
  });
  std::remove((path + ".checked").c_str());
}

// A peer late at the start hands the first op off; the caller keeps issuing small ops without
// waiting, so they queue behind it, then catch up (the caller waits for the thread to drain and
// runs inline again): every result right and the Works complete in issue order.
TEST(VerbsEngine, QueuedSmallOpsCatchUpInOrder) {
  const std::string path = uniqueTempPath("verbs-catchup");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {});
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    constexpr int kOps = 3000;
    std::vector<std::vector<int32_t>> bufs(kOps, std::vector<int32_t>(3));
    std::vector<std::shared_ptr<Work>> works(kOps);
    std::atomic<int> callbacks{0};
    std::atomic<int> overtook{-1};  // an op whose predecessor had not completed yet
    for (int i = 0; i < kOps; ++i) {
      for (int j = 0; j < 3; ++j) bufs[i][j] = (rank + 1) * (i * 3 + j);
      works[i] = pg->allreduce(tensorOf(bufs[i].data(), 3));
      Work* before = i > 0 ? works[i - 1].get() : nullptr;
      works[i]->then([&, before, i](Work&) {
        if (before != nullptr && !before->isCompleted()) overtook.store(i);
        callbacks.fetch_add(1);
      });
    }
    for (auto& w : works) w->wait();
    // A callback runs just after its Work reads as completed: give the last ones a moment.
    for (int k = 0; k < 500 && callbacks.load() < kOps; ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(callbacks.load(), kOps);
    EXPECT_EQ(overtook.load(), -1) << "op completed before the op issued ahead of it";
    for (int i = 0; i < kOps; ++i)
      for (int j = 0; j < 3; ++j)
        ASSERT_EQ(bufs[i][j], 3 * (i * 3 + j)) << "op " << i << " element " << j;
  });
}

// Catching up never holds the caller for a late peer: with a large op ahead a small op queues at
// once, and behind a small op stalled on a late peer it queues after at most C10D_INLINE_US of
// waiting; both return pending while the peer is still away.
TEST(VerbsEngine, CatchingUpNeverWaitsForALatePeer) {
  const std::string path = uniqueTempPath("verbs-catchup-late");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {});
    // Rank 1's lateness: an issue that waited for it would take this long; one that did not
    // takes microseconds, so half of it is a margin a loaded machine keeps.
    constexpr auto kLate = std::chrono::milliseconds(1000);
    pg->barrier()->wait();
    std::vector<float> big(1 << 20, 1.0f);  // 4 MiB: past C10D_INLINE_BYTES, queued
    float a = 1.0f, b = 2.0f, c = 3.0f;
    if (rank == 1) std::this_thread::sleep_for(kLate);
    const auto t0 = std::chrono::steady_clock::now();
    auto wBig = pg->allreduce(tensorOf(big.data(), big.size()));
    auto wA = pg->allreduce(tensorOf(&a, 1));  // a large op ahead: queued at once
    auto wB = pg->allreduce(tensorOf(&b, 1));
    const auto issued = std::chrono::steady_clock::now() - t0;
    if (rank == 0) {
      EXPECT_LT(issued, kLate / 2) << "issue held behind a large op";
      EXPECT_FALSE(wB->isCompleted());
    }
    for (auto* w : {&wBig, &wA, &wB}) (*w)->wait();
    EXPECT_EQ(big[0], 2.0f);
    EXPECT_EQ(a, 2.0f);
    EXPECT_EQ(b, 4.0f);
    // Small ops only: the first hands off after C10D_INLINE_US (100 us), the next waits for the
    // stalled thread at most that long, the third queues at once.
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(kLate);
    const auto t1 = std::chrono::steady_clock::now();
    auto w1 = pg->allreduce(tensorOf(&a, 1));
    auto w2 = pg->allreduce(tensorOf(&b, 1));
    auto w3 = pg->allreduce(tensorOf(&c, 1));
    const auto issued2 = std::chrono::steady_clock::now() - t1;
    if (rank == 0) {
      EXPECT_LT(issued2, kLate / 2) << "issue held by a stalled engine";
      EXPECT_FALSE(w3->isCompleted());
    }
    for (auto* w : {&w1, &w2, &w3}) (*w)->wait();
    EXPECT_EQ(a, 4.0f);
    EXPECT_EQ(b, 8.0f);
    EXPECT_EQ(c, 6.0f);
  });
}

TEST(VerbsEngine, InlineOpsHandedOffAtTheirFirstWait) {
  sweepWith(3, {{"C10D_INLINE_US", "0"}, {"C10D_INLINE_BYTES", "1M"}}, {0, 1, 7, 20011});
  sweepWith(2, {{"C10D_INLINE_US", "0"}, {"C10D_TRANSPORT", "tcp"}}, {1, 7, 5000});
}

// An inline op waiting in the shm barrier for a late peer hands itself to the engine thread once
// its C10D_INLINE_US budget is spent, however long the barrier's sched_yield phase
// (C10D_SPIN_US: auto is 20 ms where ranks fit the CPUs; 2 s here, so holding the caller for the
// whole phase cannot pass): the issue returns pending within a fraction of it.
TEST(VerbsEngine, InlineOpInTheShmBarrierHandsOffWithinItsBudget) {
  const std::string path = uniqueTempPath("verbs-barrier-handoff");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_SPIN_US", "2000000"}});
    EXPECT_EQ(pg->transportName(), "shm");
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    for (const size_t count : {size_t{1}, size_t{50000}}) {  // one barrier; chunked (200 KB)
      std::vector<float> x(count, 1.0f + rank);
      const auto t0 = std::chrono::steady_clock::now();
      auto w = pg->allreduce(tensorOf(x.data(), x.size()));
      const auto issued = std::chrono::steady_clock::now() - t0;
      if (rank == 0 && count == 1) {
        EXPECT_LT(issued, std::chrono::milliseconds(1000))
            << "the caller was held through the barrier's spin phase";
        EXPECT_FALSE(w->isCompleted());
      }
      w->wait();
      EXPECT_EQ(x.front(), 3.0f);
      EXPECT_EQ(x.back(), 3.0f);
    }
  });
}

// This process's CPU time (every thread, user and system).
std::chrono::milliseconds cpuTime() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1000L + t.tv_usec / 1000; };
  return std::chrono::milliseconds(ms(u.ru_utime) + ms(u.ru_stime));
}

// The same for an inline op that waits on a stream (a gather's root waiting for a late rank's
// block, not the shm barrier): its poll-only waits spun C10D_SPIN_US on the caller's thread.
TEST(VerbsEngine, InlineOpWaitingOnAStreamHandsOffWithinItsBudget) {
  const std::string path = uniqueTempPath("verbs-stream-handoff");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_SPIN_US", "2000000"}});
    EXPECT_EQ(pg->transportName(), "shm");
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    std::vector<float> in(256, 1.0f + rank), out(2 * 256, 0.0f);
    std::vector<Tensor> outs;
    if (rank == 0) outs = {tensorOf(out.data(), 256), tensorOf(out.data() + 256, 256)};
    const auto t0 = std::chrono::steady_clock::now();
    GatherOptions o;
    o.rootRank = 0;
    auto w = pg->gather(outs, tensorOf(in.data(), in.size()), o);
    const auto issued = std::chrono::steady_clock::now() - t0;
    if (rank == 0) {
      EXPECT_LT(issued, std::chrono::milliseconds(1000))
          << "the caller was held through the stream wait's spin phase";
      EXPECT_FALSE(w->isCompleted());
    }
    w->wait();
    if (rank == 0) {
      EXPECT_EQ(out.front(), 1.0f);
      EXPECT_EQ(out.back(), 2.0f);
    }
  });
}

// A stall spins once (C10D_SPIN_US, 20 ms here) and then sleeps, however many waits it takes:
// the engine thread re-spun the whole phase after every 10 ms sleep slice, so a rank waiting
// 1.5 s for a late peer burned about a second of CPU (two thirds of the wait).
TEST(VerbsEngine, AWaitForALatePeerSpinsOnceThenSleeps) {
  const std::string path = uniqueTempPath("verbs-late-sleeps");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_SPIN_US", "20000"}});
    pg->barrier()->wait();
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::vector<float> in(256, 1.0f + rank), out(2 * 256, 0.0f);
    std::vector<Tensor> outs;
    if (rank == 0) outs = {tensorOf(out.data(), 256), tensorOf(out.data() + 256, 256)};
    GatherOptions o;
    o.rootRank = 0;
    const auto cpu0 = cpuTime();
    pg->gather(outs, tensorOf(in.data(), in.size()), o)->wait();
    const auto used = cpuTime() - cpu0;
    if (rank == 0) {
      EXPECT_LT(used.count(), 400)
          << "waiting 1.5 s for a late peer took " << used.count() << " ms of CPU";
      EXPECT_EQ(out.back(), 2.0f);
    }
  });
}

// An idle group's threads sleep: after collectives and send/recv, a second without ops costs
// (almost) no CPU. The p2p thread spun C10D_SPIN_US again after every sleep slice: each idle
// rank burned two thirds of a CPU, and the scheduler put both ranks' main threads on one CPU
// (small allreduces took 8-12 us instead of 0.8-1).
TEST(VerbsEngine, AnIdleGroupSleeps) {
  const std::string path = uniqueTempPath("verbs-idle");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg = makeVerbs(path, rank, size, {{"C10D_SPIN_US", "20000"}});
    std::vector<float> x(1024, 1.0f);
    pg->allreduce(tensorOf(x.data(), x.size()))->wait();
    const int peer = 1 - rank;
    auto s = pg->send(tensorOf(x.data(), 16), peer);
    std::vector<float> y(16, 0.0f);
    pg->recv(tensorOf(y.data(), y.size()), peer)->wait();
    s->wait();
    EXPECT_EQ(y.front(), 2.0f);
    const auto cpu0 = cpuTime();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const auto used = cpuTime() - cpu0;
    EXPECT_LT(used.count(), 150) << "rank " << rank << " used " << used.count()
                                 << " ms of CPU in a second without ops";
    pg->barrier()->wait();
  });
}

// Ranks on one CPU move apart (C10D_SHM_SPREAD): both ranks run their first ops pinned to one
// CPU, then get their whole mask back (where a store wake-up can leave them, and where this VM's
// scheduler kept them ~10 ms); rank 1 comes 5 ms late to the next op, and rank 0, waiting in the
// barrier on the CPU rank 1 last used, moves to another. The move comes before the wait proper,
// so whether the op then stays inline or hands off is not this test's concern (a waiter whose
// yield gave the CPU to another thread of its process sleeps, and so hands off, at once:
// spin_wait.h; on a loaded machine that happens).
// Checked by the move's count: where the rank runs afterwards is up to the scheduler. So is
// whether the setup holds on a loaded machine: rank 0 may be moved by the scheduler first, or be
// preempted until rank 1 has arrived (no wait, no move). So up to 10 attempts, and rank 0 must
// move in one of them; the ranks agree on the outcome through an allreduce. The moves are
// bounded by what the transport promises, one per 10 ms: an op preempted for longer may move
// twice.
TEST(VerbsEngine, RanksSharingACpuMoveApart) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs two CPUs in this process's affinity mask";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  {
    cpu_set_t probe;
    CPU_ZERO(&probe);
    CPU_SET(first, &probe);
    if (sched_setaffinity(0, sizeof(probe), &probe) != 0)
      GTEST_SKIP() << "sched_setaffinity is refused here (" << std::strerror(errno) << ")";
    ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  }
  const std::string path = uniqueTempPath("verbs-spread");
  expectAllRanksOk(2, [&](int rank, int size) {
    auto pg =
        makeVerbs(path, rank, size, {{"C10D_SHM_SPREAD", "1"}, {"C10D_INLINE_US", "1000000"}});
    ASSERT_EQ(pg->transportName(), "shm");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    int attempts = 0;
    float moved = 0.0f;  // rank 0's moves in the last attempt, summed over the ranks
    while (moved == 0.0f && attempts < 10) {
      ++attempts;
      // Past the transport's limit of one move per 10 ms.
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
      std::vector<float> x(16, 1.0f);
      for (int i = 0; i < 3; ++i) pg->allreduce(tensorOf(x.data(), x.size()))->wait();
      ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const uint64_t movesBefore = shmCpuMovesForTesting(*pg);
      const auto start = std::chrono::steady_clock::now();
      pg->allreduce(tensorOf(x.data(), x.size()))->wait();
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_EQ(x.front(), 16.0f);  // four sums of two ranks' equal values
      if (rank == 0) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
        // At most one move per 10 ms: one op preempted for longer on a loaded machine may
        // move again, and that is allowed.
        const uint64_t moves = shmCpuMovesForTesting(*pg) - movesBefore;
        EXPECT_LE(moves, 1 + static_cast<uint64_t>(ms / 10))
            << "rank 0 moved " << moves << " times in one op of " << ms << " ms";
        moved = static_cast<float>(moves);
      } else {
        moved = 0.0f;
      }
      pg->allreduce(tensorOf(&moved, 1))->wait();
    }
    EXPECT_GE(moved, 1.0f) << "rank 0 did not move off the CPU rank 1 shares in " << attempts
                           << " attempts";
  });
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
