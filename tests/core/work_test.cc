// Tests for c10d/core/work.h: states, finish() first-call-wins, callbacks exactly once under races,
// wait() timeouts and messages, abort(), future() and composite Works.
#include "c10d/core/work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/backend_work.h"
#include "tests/common/backend_side.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using std::chrono::milliseconds;
using test::backendSide;

std::shared_ptr<BackendWork> makeWork(OpType op = OpType::kAllreduce, uint64_t seq = 12,
                                      Milliseconds timeout = kDefaultTimeout) {
  return std::make_shared<BackendWork>(op, seq, "fake:world", timeout);
}

std::string messageOf(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return "";
}

// Whether `T` lets its users call each backend-side member (an inaccessible member is a
// substitution failure, so these are false for Work and true for BackendWork).
#define C10D_CAN_CALL(name, call)        \
  template <typename T, typename = void> \
  struct name : std::false_type {};      \
  template <typename T>                  \
  struct name<T, std::void_t<decltype(std::declval<T&>().call)>> : std::true_type {};
C10D_CAN_CALL(CanFinish, finish())
C10D_CAN_CALL(CanFinishUnshared, finishUnshared())
C10D_CAN_CALL(CanMarkStarted, markStarted())
C10D_CAN_CALL(CanMarkStartedUnshared, markStartedUnshared(0))
C10D_CAN_CALL(CanPublishStartUnshared, publishStartUnshared())
C10D_CAN_CALL(CanSetSourceRank, setSourceRank(1))
C10D_CAN_CALL(CanSetDesc, setDesc(OpDesc{}))
C10D_CAN_CALL(CanAttachDiagnostics, attachDiagnostics(nullptr, 0))
#undef C10D_CAN_CALL

TEST(Work, BackendSideIsNotPublicToUsers) {
  // A caller holding the Work a collective returned can wait on it, not complete it.
  EXPECT_FALSE(CanFinish<Work>::value);
  EXPECT_FALSE(CanFinishUnshared<Work>::value);
  EXPECT_FALSE(CanMarkStarted<Work>::value);
  EXPECT_FALSE(CanMarkStartedUnshared<Work>::value);
  EXPECT_FALSE(CanPublishStartUnshared<Work>::value);
  EXPECT_FALSE(CanSetSourceRank<Work>::value);
  EXPECT_FALSE(CanSetDesc<Work>::value);
  EXPECT_FALSE(CanAttachDiagnostics<Work>::value);
  // The backend's own (c10d/core/backend_work.h): ProcessGroup alone sets the description and links
  // the flight record.
  EXPECT_TRUE(CanFinish<BackendWork>::value);
  EXPECT_TRUE(CanFinishUnshared<BackendWork>::value);
  EXPECT_TRUE(CanMarkStarted<BackendWork>::value);
  EXPECT_TRUE(CanMarkStartedUnshared<BackendWork>::value);
  EXPECT_TRUE(CanPublishStartUnshared<BackendWork>::value);
  EXPECT_TRUE(CanSetSourceRank<BackendWork>::value);
  EXPECT_FALSE(CanSetDesc<BackendWork>::value);
  EXPECT_FALSE(CanAttachDiagnostics<BackendWork>::value);
}

TEST(Work, StatesAndDescribe) {
  auto w = makeWork();
  EXPECT_FALSE(w->isCompleted());
  EXPECT_FALSE(w->isSuccess());
  EXPECT_EQ(w->exception(), nullptr);
  EXPECT_EQ(w->describe(), "allreduce #12 in group fake:world");
  EXPECT_EQ(w->sourceRank(), -1);
  EXPECT_TRUE(w->finish());
  EXPECT_TRUE(w->isCompleted());
  EXPECT_TRUE(w->isSuccess());
  EXPECT_TRUE(w->wait());
  EXPECT_EQ(Work(OpType::kBarrier, 3).describe(), "barrier #3");
}

TEST(Work, FinishFirstCallWins) {
  auto w = makeWork();
  EXPECT_TRUE(w->finish(std::make_exception_ptr(CommError("peer 3 died"))));
  EXPECT_FALSE(w->finish());
  EXPECT_FALSE(w->finish(std::make_exception_ptr(Error("later"))));
  EXPECT_TRUE(w->isCompleted());
  EXPECT_FALSE(w->isSuccess());
  EXPECT_EQ(messageOf(w->exception()), "peer 3 died");
  EXPECT_THROW(w->wait(), CommError);
}

TEST(Work, FinishRaceHasOneWinner) {
  for (int iter = 0; iter < 50; ++iter) {
    auto w = makeWork();
    std::atomic<int> winners{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        if (w->finish(i % 2 ? std::make_exception_ptr(Error("e")) : nullptr)) ++winners;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1);
  }
}

TEST(Work, CallbacksRunOnceEachUnderRaces) {
  // 8 threads add callbacks while another finishes: every callback runs exactly once, either on
  // the finishing thread or on the adding thread.
  for (int iter = 0; iter < 30; ++iter) {
    auto w = makeWork();
    constexpr int kThreads = 8;
    constexpr int kPerThread = 50;
    std::vector<std::atomic<int>> counts(kThreads * kPerThread);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < kPerThread; ++i) {
          w->then([&counts, idx = t * kPerThread + i](Work& done) {
            EXPECT_TRUE(done.isCompleted());
            counts[idx].fetch_add(1);
          });
        }
      });
    }
    std::thread finisher([&] {
      while (!go.load()) std::this_thread::yield();
      w->finish();
    });
    go = true;
    for (auto& t : threads) t.join();
    finisher.join();
    for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(counts[i].load(), 1) << i;
  }
}

TEST(Work, CallbackOnCompletingThreadOrCaller) {
  auto w = makeWork();
  std::thread::id ranOn;
  w->then([&](Work&) { ranOn = std::this_thread::get_id(); });
  std::thread t([&] { w->finish(); });
  const auto finisherId = t.get_id();
  t.join();
  EXPECT_EQ(ranOn, finisherId);
  // Already complete: runs on this thread before then() returns.
  std::thread::id ranNow;
  w->then([&](Work&) { ranNow = std::this_thread::get_id(); });
  EXPECT_EQ(ranNow, std::this_thread::get_id());
}

TEST(Work, ThrowingCallbackIsSwallowed) {
  auto w = makeWork();
  int after = 0;
  w->then([](Work&) { throw std::runtime_error("callback boom"); });
  w->then([&](Work&) { ++after; });
  testing::internal::CaptureStderr();
  EXPECT_TRUE(w->finish());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(after, 1);
  EXPECT_NE(err.find("callback boom"), std::string::npos) << err;
  EXPECT_NE(err.find("allreduce #12"), std::string::npos) << err;
}

TEST(Work, WaitTimeoutNamesOpSeqGroupAndTimeout) {
  auto w = makeWork(OpType::kBroadcast, 7);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    w->wait(milliseconds(50));
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("broadcast #7 in group fake:world"), std::string::npos) << msg;
    EXPECT_NE(msg.find("50 ms"), std::string::npos) << msg;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(50));
  EXPECT_FALSE(w->isCompleted());  // still pending after a wait timeout
  w->finish();
  EXPECT_TRUE(w->wait(milliseconds(0)));
}

TEST(Work, WaitUnsetUsesOpTimeout) {
  auto w = makeWork(OpType::kAllgather, 1, milliseconds(30));
  try {
    w->wait();
    FAIL();
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("30 ms"), std::string::npos) << e.what();
  }
}

// The waiter is woken by finish(), not by its own timeout. A missed wake-up would still return
// (the wait's predicate sees the Work complete when the timeout ends), so the check is that the
// wait ends long before its 60 s: a bound on a hang, with a margin no loaded machine needs.
TEST(Work, WaitWakesOnFinishFromAnotherThread) {
  auto w = makeWork();
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(20));
    w->finish();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(w->wait(milliseconds(60000)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  t.join();

  auto failed = makeWork();
  std::thread u([&] {
    std::this_thread::sleep_for(milliseconds(20));
    failed->finish(std::make_exception_ptr(TimeoutError("backend watchdog")));
  });
  try {
    failed->wait(milliseconds(60000));
    ADD_FAILURE() << "wait() returned for a failed op";
  } catch (const TimeoutError& e) {
    EXPECT_STREQ(e.what(), "backend watchdog");
  }
  u.join();
}

class AbortCountingWork : public BackendWork {
 public:
  using BackendWork::BackendWork;
  std::atomic<int> aborts{0};

 protected:
  void onAbort() override { ++aborts; }
};

TEST(Work, AbortCompletesWithErrorAndCallsOnAbortOnce) {
  auto w = std::make_shared<AbortCountingWork>(OpType::kSend, 4, "fake:world");
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { w->abort(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(w->aborts.load(), 1);
  EXPECT_TRUE(w->isCompleted());
  EXPECT_FALSE(w->isSuccess());
  try {
    w->wait();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("send #4"), std::string::npos);
  }
  // Aborting a completed Work does nothing.
  auto done = std::make_shared<AbortCountingWork>(OpType::kSend, 5, "g");
  done->finish();
  done->abort();
  EXPECT_EQ(done->aborts.load(), 0);
  EXPECT_TRUE(done->isSuccess());
}

TEST(Work, FutureCarriesResult) {
  auto ok = makeWork();
  auto f = ok->future();
  EXPECT_EQ(f.wait_for(milliseconds(0)), std::future_status::timeout);
  ok->finish();
  EXPECT_NO_THROW(f.get());
  EXPECT_NO_THROW(ok->future().get());  // created after completion

  auto bad = makeWork();
  bad->finish(std::make_exception_ptr(CommError("rank 2 gone")));
  EXPECT_THROW(bad->future().get(), CommError);
  auto bad2 = makeWork();
  auto f2 = bad2->future();
  bad2->finish(std::make_exception_ptr(CommError("rank 3 gone")));
  EXPECT_THROW(f2.get(), CommError);
}

TEST(CompositeWork, CompletesWhenAllPartsDo) {
  std::vector<std::shared_ptr<Work>> parts = {makeWork(), makeWork(), makeWork()};
  auto c = makeCompositeWork(parts, OpType::kCoalesced, 40, "fake:world", kDefaultTimeout);
  EXPECT_EQ(c->describe(), "coalesced #40 in group fake:world");
  backendSide(parts[2])->finish();
  backendSide(parts[0])->finish();
  EXPECT_FALSE(c->isCompleted());
  std::thread t([&] { backendSide(parts[1])->finish(); });
  EXPECT_TRUE(c->wait(milliseconds(10000)));
  t.join();
  EXPECT_TRUE(c->isSuccess());
}

TEST(CompositeWork, ErrorIsFirstPartsInOrder) {
  std::vector<std::shared_ptr<Work>> parts = {makeWork(), makeWork(), makeWork()};
  auto c = makeCompositeWork(parts, OpType::kCoalesced, 1, "g", kDefaultTimeout);
  backendSide(parts[2])->finish(std::make_exception_ptr(Error("third")));
  backendSide(parts[1])->finish(std::make_exception_ptr(CommError("second")));
  backendSide(parts[0])->finish();
  ASSERT_TRUE(c->isCompleted());
  EXPECT_EQ(messageOf(c->exception()), "second");
  EXPECT_THROW(c->wait(), CommError);
}

TEST(CompositeWork, EmptyAndAlreadyCompleteParts) {
  auto empty = makeCompositeWork({}, OpType::kCoalesced, 0, "g", kDefaultTimeout);
  EXPECT_TRUE(empty->isSuccess());
  auto done = makeCompositeWork({makeCompletedWork(OpType::kSend, 1, "g")}, OpType::kCoalesced, 2,
                                "g", kDefaultTimeout);
  EXPECT_TRUE(done->isSuccess());
}

TEST(CompositeWork, AbortAbortsParts) {
  auto p0 = std::make_shared<AbortCountingWork>(OpType::kSend, 1, "g");
  auto p1 = std::make_shared<AbortCountingWork>(OpType::kRecv, 2, "g");
  p1->finish();
  auto c = makeCompositeWork({p0, p1}, OpType::kCoalesced, 3, "g", kDefaultTimeout);
  c->abort();
  EXPECT_EQ(p0->aborts.load(), 1);
  EXPECT_EQ(p1->aborts.load(), 0);  // already complete
  EXPECT_TRUE(p0->isCompleted());
  EXPECT_TRUE(c->isCompleted());
  EXPECT_NE(messageOf(c->exception()).find("aborted"), std::string::npos);
}

TEST(CompositeWork, PartsFinishingConcurrently) {
  for (int iter = 0; iter < 30; ++iter) {
    std::vector<std::shared_ptr<Work>> parts;
    for (int i = 0; i < 8; ++i) parts.push_back(makeWork());
    auto c = makeCompositeWork(parts, OpType::kCoalesced, 0, "g", kDefaultTimeout);
    std::atomic<int> cbs{0};
    c->then([&](Work&) { ++cbs; });
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { backendSide(parts[i])->finish(); });
    for (auto& t : threads) t.join();
    EXPECT_TRUE(c->isSuccess());
    EXPECT_EQ(cbs.load(), 1);
  }
}

TEST(Work, CompletedWork) {
  auto ok = makeCompletedWork(OpType::kBarrier, 9, "g");
  EXPECT_TRUE(ok->isSuccess());
  EXPECT_EQ(ok->sequenceNumber(), 9u);
  auto bad = makeCompletedWork(OpType::kBarrier, 9, "g", std::make_exception_ptr(Error("x")));
  EXPECT_THROW(bad->wait(), Error);
  EXPECT_STREQ(toString(OpType::kReduceScatterTensor), "reduce_scatter_tensor");
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
