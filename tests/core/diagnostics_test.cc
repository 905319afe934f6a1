// Core diagnostics without a network: rank lists, the flight recorder ring (wrap-around, states,
// late updates, the JSON dump, stats), the desync report of four fake ranks sharing a HashStore
// (who is behind, who is silent), the rendezvous wait's progress lines and its timeout naming the
// missing ranks, and the settings' validation. Real processes: tests/backends/diagnostics_test.cc.
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/rank_list.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/core/rendezvous_wait.h"
#include "c10d/store/hash_store.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

OpDesc allreduceDesc(uint64_t seq, uint64_t count = 256) {
  OpDesc d;
  d.seq = d.collSeq = seq;
  d.op = OpType::kAllreduce;
  d.dtype = DataType::kFloat32;
  d.count = count;
  d.hasReduceOp = true;
  d.reduceOp = ReduceOp::SUM;
  return d;
}

TEST(RankList, Ranges) {
  EXPECT_EQ(formatRanks({2}), "rank 2");
  EXPECT_EQ(formatRanks({0, 1}), "ranks 0, 1");
  EXPECT_EQ(formatRanks({5, 0, 1, 2, 2}), "ranks 0-2, 5");
  EXPECT_EQ(formatRankRanges({7, 8, 9, 11, 13, 14}), "7-9, 11, 13, 14");
}

TEST(FlightRecorder, RingKeepsTheLastOpsAndIgnoresOverwrittenOnes) {
  FlightRecorder rec(4, "fake:world", "fake", 0, 2);
  std::vector<FlightRecorder::Id> ids;
  for (uint64_t s = 0; s < 6; ++s) ids.push_back(rec.record(allreduceDesc(s), 1000 + s));
  rec.onStart(ids[0], 5000);  // overwritten: ignored
  rec.onEnd(ids[1], 5000, nullptr);
  rec.onStart(ids[2], 2002);
  rec.onEnd(ids[2], 3002, nullptr);
  rec.onEnd(ids[3], 3003, std::make_exception_ptr(TimeoutError("peer gone")));
  rec.onStart(ids[4], 2004);
  auto snap = rec.snapshot();
  ASSERT_EQ(snap.size(), 4u);
  EXPECT_EQ(snap[0].desc.seq, 2u);
  EXPECT_EQ(snap[0].state, FlightRecorder::State::kCompleted);
  EXPECT_EQ(snap[0].startNs, 2002);
  EXPECT_EQ(snap[0].endNs, 3002);
  EXPECT_EQ(snap[1].state, FlightRecorder::State::kFailed);
  EXPECT_EQ(snap[1].error, "peer gone");
  EXPECT_EQ(snap[2].state, FlightRecorder::State::kStarted);
  EXPECT_EQ(snap[3].state, FlightRecorder::State::kIssued);
  FlightRecorder::Entry pos;
  ASSERT_TRUE(rec.position(&pos));
  EXPECT_EQ(pos.desc.seq, 4u) << "the oldest op not completed";
  // The two that ended while in the ring count in the stats (#1 ended after it was overwritten).
  auto stats = rec.stats();
  ASSERT_EQ(stats.rows.size(), 1u);
  EXPECT_EQ(stats.rows[0].count, 2u);
  EXPECT_EQ(stats.rows[0].failed, 1u);

  FlightRecorder off(0, "fake:world", "fake", 0, 2);
  EXPECT_EQ(off.record(allreduceDesc(0), 1), FlightRecorder::kNoId);
  EXPECT_TRUE(off.snapshot().empty());
}

TEST(FlightRecorder, StatsPercentilesAndBytes) {
  FlightRecorder rec(16, "fake:world", "fake", 1, 2);
  // 100 allreduces taking 1..100 us, 3 broadcasts of 10 ms.
  for (int k = 1; k <= 100; ++k) {
    auto id = rec.record(allreduceDesc(k), 1000000);
    rec.onEnd(id, 1000000 + k * 1000, nullptr);
  }
  for (int k = 0; k < 3; ++k) {
    OpDesc d = allreduceDesc(200 + k, 10);
    d.op = OpType::kBroadcast;
    d.dtype = DataType::kFloat64;
    auto id = rec.record(d, 0);
    rec.onEnd(id, 10000000, nullptr);
  }
  OpStats s = rec.stats();
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].op, OpType::kBroadcast);
  EXPECT_EQ(s.rows[0].count, 3u);
  EXPECT_EQ(s.rows[0].bytes, 3u * 10 * 8);
  EXPECT_NEAR(s.rows[0].p50Us, 10000, 1000);
  const auto& ar = s.rows[1];
  EXPECT_EQ(ar.op, OpType::kAllreduce);
  EXPECT_EQ(ar.count, 100u);
  EXPECT_EQ(ar.bytes, 100u * 256 * 4);
  EXPECT_NEAR(ar.p50Us, 50, 50 * 0.1);
  EXPECT_NEAR(ar.p99Us, 99, 99 * 0.1);
  EXPECT_DOUBLE_EQ(ar.maxUs, 100);
  const std::string table = s.table();
  EXPECT_NE(table.find("group fake:world rank 1"), std::string::npos) << table;
  EXPECT_NE(table.find("allreduce"), std::string::npos) << table;
  EXPECT_NE(table.find("p99 (us)"), std::string::npos) << table;
}

TEST(FlightRecorder, JsonDumpHasEveryField) {
  FlightRecorder rec(8, "fake:world/group1", "fake", 1, 3);
  auto a = rec.record(allreduceDesc(0, 7), FlightRecorder::nowNs());
  rec.onEnd(a, FlightRecorder::nowNs(), std::make_exception_ptr(Error("bad \"quote\"\n")));
  OpDesc alltoall;
  alltoall.seq = 1;
  alltoall.op = OpType::kAlltoallSingle;
  alltoall.setSplits({1, 2, 3}, {3, 2, 1});
  rec.record(alltoall, FlightRecorder::nowNs());
  const std::string path = uniqueTempPath("dump.json");
  rec.dump(path, "on demand");
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "c10d-flight-recorder");
  EXPECT_EQ(j["group"], "fake:world/group1");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["size"], 3);
  EXPECT_EQ(j["reason"], "on demand");
  ASSERT_EQ(j["entries"].size(), 2u);
  const auto& e0 = j["entries"][0];
  EXPECT_EQ(e0["op"], "allreduce");
  EXPECT_EQ(e0["dtype"], "float");
  EXPECT_EQ(e0["count"], 7);
  EXPECT_EQ(e0["reduce_op"], "sum");
  EXPECT_EQ(e0["state"], "failed");
  EXPECT_EQ(e0["error"], "bad \"quote\"\n");
  EXPECT_GT(e0["end_us"].get<int64_t>(), 0);
  const auto& e1 = j["entries"][1];
  EXPECT_EQ(e1["op"], "alltoall_single");
  EXPECT_EQ(e1["send_counts"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(e1["state"], "issued");
  EXPECT_EQ(e1["end_us"], 0);

  expectThrowsWith<Error>([&] { rec.dump("/nonexistent-dir/x.json", "r"); },
                          {"/nonexistent-dir/x.json", "fake:world/group1", "rank 1"});
}

// Four fake ranks of one group over one HashStore, as four processes would be.
struct FakeJob {
  explicit FakeJob(int n, const std::map<std::string, std::string>& config) {
    registerFakeBackend();
    store = std::make_shared<HashStore>(Milliseconds(5000));
    for (int r = 0; r < n; ++r) {
      ProcessGroup::Options o;
      o.timeout = Milliseconds(5000);
      o.config = config;
      auto pg = std::make_shared<FakeProcessGroup>(store, r, n, o);
      pg->pendingWorks = true;
      groups.push_back(pg);
    }
  }
  std::shared_ptr<HashStore> store;
  std::vector<std::shared_ptr<FakeProcessGroup>> groups;
};

// Issues `n` allreduces on `pg` and completes all but the last `pending` of them.
std::vector<std::shared_ptr<Work>> issue(FakeProcessGroup& pg, int n, int pending) {
  static std::vector<float> buf(4);
  for (int i = 0; i < n; ++i) pg.allreduce(tensorOf(buf.data(), buf.size()));
  auto works = pg.pending();
  for (int i = 0; i + pending < n; ++i) backendSide(works[i])->finish();
  return works;
}

TEST(Desync, NamesTheRankBehindAndTheOnesWaiting) {
  FakeJob job(4, {{"C10D_DESYNC_WAIT_MS", "2000"}});
  std::vector<std::shared_ptr<Work>> stuck;
  for (int r = 0; r < 4; ++r) {
    // Ranks 0-2 are in allreduce #17; rank 3 is still in #16.
    auto works = issue(*job.groups[r], r < 3 ? 18 : 17, 1);
    stuck.push_back(works.back());
  }
  // Each rank's op times out (the backend fails it); all report at about the same time.
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      backendSide(stuck[r])->finish(std::make_exception_ptr(TimeoutError("op timed out")));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 4; ++r) {
    expectThrowsWith<TimeoutError>(
        [&] { stuck[r]->wait(); },
        {"op timed out", "desync report of group fake:world from rank " + std::to_string(r),
         "rank 3 is still at allreduce #16", "ranks 0-2 wait in allreduce #17"});
  }
  // The dump went to stderr (no C10D_FLIGHT_RECORDER_DIR), the group's stats count the failure.
  auto stats = job.groups[0]->stats();
  ASSERT_EQ(stats.rows.size(), 1u);
  EXPECT_EQ(stats.rows[0].count, 18u);
  EXPECT_EQ(stats.rows[0].failed, 1u);
}

TEST(Desync, NamesSilentAndIdleRanksWithinTheWait) {
  // A wait of a second: a new exchange (which waits that long for silent ranks) is told from
  // reusing the report (no wait) by margins a loaded machine keeps.
  FakeJob job(4, {{"C10D_DESYNC_WAIT_MS", "1000"}});
  auto w0 = issue(*job.groups[0], 5, 1);
  issue(*job.groups[1], 4, 0);  // idle after #3: publishes only if it fails itself (it does not)
  issue(*job.groups[3], 5, 1);
  // Rank 1 and 2 never fail (never publish); rank 3 fails first and publishes "#4 waiting".
  issue(*job.groups[2], 1, 1);
  auto w3 = job.groups[3]->pending().back();
  backendSide(w3)->finish(std::make_exception_ptr(TimeoutError("timed out on rank 3")));
  const auto start = Clock::now();
  backendSide(w0.back())->finish(std::make_exception_ptr(TimeoutError("timed out on rank 0")));
  const auto took = Clock::now() - start;
  EXPECT_GE(took, Milliseconds(980)) << "waited for the silent ranks";
  EXPECT_LT(took, Milliseconds(5000)) << "the wait is bounded";
  expectThrowsWith<TimeoutError>([&] { w0.back()->wait(); },
                                 {"ranks 0, 3 wait in allreduce #4",
                                  "ranks 1, 2 are silent: no position published within 1000 ms"});
  // A later timeout of the group carries the first report, without a new exchange.
  auto w0b = issue(*job.groups[0], 1, 1).back();
  const auto again = Clock::now();
  backendSide(w0b)->finish(std::make_exception_ptr(TimeoutError("again")));
  EXPECT_LT(Clock::now() - again, Milliseconds(700)) << "a second exchange, not the first report";
  expectThrowsWith<TimeoutError>(
      [&] { w0b->wait(); }, {"again; desync report of group fake:world from rank 0: ranks 0, 3"});
}

// A rank whose op failed with a CommError (it lost a peer and left the op) is listed as failed,
// so "silent" names only ranks that are stopped or dead.
TEST(Desync, FailedRanksAreToldApartFromSilentOnes) {
  FakeJob job(4, {{"C10D_DESYNC_WAIT_MS", "300"}});
  auto w0 = issue(*job.groups[0], 5, 1);
  auto w1 = issue(*job.groups[1], 5, 1);
  issue(*job.groups[2], 5, 1);  // rank 2 "died" in #4: it never publishes
  issue(*job.groups[3], 5, 1);
  backendSide(w1.back())->finish(
      std::make_exception_ptr(CommError("rank 1 lost its connection to rank 2")));
  // No one has timed out yet: the others are still in the op, so no report (it would call them
  // silent).
  EXPECT_EQ(expectThrowsWith<CommError>([&] { w1.back()->wait(); }),
            "rank 1 lost its connection to rank 2");
  backendSide(w0.back())->finish(std::make_exception_ptr(TimeoutError("timed out on rank 0")));
  expectThrowsWith<TimeoutError>([&] { w0.back()->wait(); },
                                 {"rank 1 failed in allreduce #4 with a communication error",
                                  "rank 0 waits in allreduce #4", "ranks 2, 3 are silent"});
}

// A rank that loses its connection to a peer that timed out (and closed its sockets as it failed)
// gets the desync report too: the cause is the rank they waited for, not the peer that left.
TEST(Desync, ConnectionLostToARankThatTimedOutCarriesTheReport) {
  FakeJob job(4, {{"C10D_DESYNC_WAIT_MS", "300"}});
  auto w0 = issue(*job.groups[0], 5, 1);
  auto w1 = issue(*job.groups[1], 5, 1);
  issue(*job.groups[2], 5, 1);  // rank 2 is stopped in #4: it never publishes
  auto w3 = issue(*job.groups[3], 5, 1);
  // Rank 0's op times out first and its transport closes the connection at once, so rank 1 sees
  // the connection lost ~30 ms before rank 0 publishes its position (Gloo's pair does this); rank 3
  // is still waiting (it publishes once its own op fails).
  std::thread t0([&] {
    std::this_thread::sleep_for(Milliseconds(30));
    backendSide(w0.back())->finish(std::make_exception_ptr(TimeoutError("timed out on rank 0")));
  });
  std::thread t3([&] {
    std::this_thread::sleep_for(Milliseconds(60));
    backendSide(w3.back())->finish(std::make_exception_ptr(TimeoutError("timed out on rank 3")));
  });
  backendSide(w1.back())->finish(
      std::make_exception_ptr(CommError("rank 1 lost its connection to rank 0")));
  t0.join();
  t3.join();
  expectThrowsWith<CommError>([&] { w1.back()->wait(); },
                              {"rank 1 lost its connection to rank 0; desync report of group "
                               "fake:world from rank 1",
                               "rank 1 failed in allreduce #4 with a communication error",
                               "ranks 0, 3 wait in allreduce #4", "rank 2 is silent"});
}

TEST(Desync, OffWhenDisabled) {
  FakeJob job(2, {{"C10D_DESYNC_WAIT_MS", "0"}});
  auto w = issue(*job.groups[0], 1, 1).back();
  backendSide(w)->finish(std::make_exception_ptr(TimeoutError("plain")));
  EXPECT_EQ(expectThrowsWith<TimeoutError>([&] { w->wait(); }), "plain");
}

TEST(RendezvousWait, ProgressLinesThenTimeoutNamingMissingRanks) {
  HashStore store(Milliseconds(5000));
  store.set("k0", std::string("1"));
  RankWait how;
  how.group = "verbs:world";
  how.rank = 0;
  how.timeout = Milliseconds(1600);
  how.progressMs = 100;
  testing::internal::CaptureStderr();
  const auto start = Clock::now();
  expectThrowsWith<TimeoutError>(
      [&] {
        waitForRanks(store, {"k0", "k1", "k2"}, {0, 1, 2}, how);
      },
      {"group verbs:world (rank 0): ranks 1, 2 of 3 never joined within 1600 ms", "1 of 3 did",
       "'k1', 'k2' never set"});
  const auto took = Clock::now() - start;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_GE(took, Milliseconds(1550));
  EXPECT_LT(took, Milliseconds(3000));
  // Lines at ~0.1, 0.3, 0.7 and 1.5 s (doubling): a handful, not one per poll.
  size_t lines = 0;
  for (size_t at = err.find("c10d: group verbs:world (rank 0): 1 of 3 ranks joined after");
       at != std::string::npos; at = err.find("c10d: group verbs:world (rank 0): 1 of 3", at + 1))
    ++lines;
  EXPECT_GE(lines, 2u) << err;
  EXPECT_LE(lines, 4u) << err;
  EXPECT_NE(err.find("; waiting for ranks 1, 2\n"), std::string::npos) << err;
}

TEST(RendezvousWait, LateRanksJoinAndSilentByDefaultWhenFast) {
  HashStore store(Milliseconds(5000));
  RankWait how;
  how.group = "gloo:world";
  how.timeout = Milliseconds(10000);
  how.progressMs = 100;
  store.set("k0", std::string("1"));
  testing::internal::CaptureStderr();
  std::thread late([&] {
    std::this_thread::sleep_for(Milliseconds(150));
    store.set("k1", std::string("1"));
    std::this_thread::sleep_for(Milliseconds(300));
    store.set("k2", std::string("1"));
  });
  waitForRanks(store, {"k0", "k1", "k2"}, {0, 1, 2}, how);
  late.join();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("1 of 3 ranks joined"), std::string::npos) << err;
  EXPECT_NE(err.find("2 of 3 ranks joined"), std::string::npos) << err;
  EXPECT_NE(err.find("waiting for rank 2\n"), std::string::npos) << err;

  testing::internal::CaptureStderr();
  how.progressMs = 5000;
  waitForRanks(store, {"k0", "k1", "k2"}, {0, 1, 2}, how);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "a healthy start prints nothing";
}

TEST(DiagnosticsConfig, BadValuesNameTheSetting) {
  expectThrowsWith<InvalidArgument>(
      [] {
        DiagnosticsConfig::load({{"C10D_FLIGHT_RECORDER_SIZE", "-3"}});
      },
      {"C10D_FLIGHT_RECORDER_SIZE='-3'", "not an integer"});
  expectThrowsWith<InvalidArgument>(
      [] {
        DiagnosticsConfig::load({{"C10D_DESYNC_WAIT_MS", "x"}});
      },
      {"C10D_DESYNC_WAIT_MS='x'"});
  expectThrowsWith<InvalidArgument>(
      [] {
        DiagnosticsConfig::load({{"C10D_STRAGGLER_REPORT", "yes"}});
      },
      {"C10D_STRAGGLER_REPORT='yes'", "expected 0 or 1"});
  auto c = DiagnosticsConfig::load({{"C10D_FLIGHT_RECORDER_SIZE", "17"}});
  EXPECT_EQ(c.flightRecorderSize, 17u);
  EXPECT_TRUE(isDiagnosticsSetting("C10D_FLIGHT_RECORDER_DIR"));
  EXPECT_FALSE(isDiagnosticsSetting("C10D_TRANSPORT"));
  std::ostringstream os;
  printDiagnosticsConfig(os, c);
  EXPECT_NE(os.str().find("C10D_FLIGHT_RECORDER_SIZE"), std::string::npos);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
