// Conformance: barrier() holds every rank until the last one has arrived. Ranks arrive staggered
// (rank r sleeps r * 50 ms, then the reverse order, so the last to arrive is rank size-1 and then
// rank 0); just before entering, each rank drops a marker file in a directory shared by the
// processes (a side channel the backend does not touch) holding its arrival time. When its
// barrier returns, a rank must find every other rank's marker, with an arrival time before its
// own departure. A
// barrier that returns at once, or one that only waits for some ranks (rank 0 gathering without a
// release, a dissemination with too few rounds), fails here; the sweep only calls barrier().
//
// Runs for every conformance backend (gloo, verbs over shm = futex barrier, verbs over tcp =
// dissemination) and for verbs over shm with the dissemination algorithm forced.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <fstream>
#include <thread>
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kStagger = std::chrono::milliseconds(50);

std::string marker(const std::string& dir, int round, int rank) {
  return dir + "/round" + std::to_string(round) + "-rank" + std::to_string(rank);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Rounds: 0 = rank r arrives r * 50 ms late, 1 = reversed, 2 = everyone at once (the barrier
// must still work when nobody waits long).
void staggeredBarriers(const BackendParam& p, int ws) {
  const std::string path = uniqueTempPath("barrier");
  const std::string dir = path + ".d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0) << dir;
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(90);
  expectAllRanksOk(
      ws,
      [&](int rank, int size) {
        auto pg = makeGroup(p, path, rank, size);
        pg->barrier()->wait();  // everyone connected: setup time does not count below
        for (int round = 0; round < 3; ++round) {
          const int position = round == 0 ? rank : round == 1 ? size - 1 - rank : 0;
          std::this_thread::sleep_for(kStagger * position);
          // The marker holds the arrival time: steady_clock is CLOCK_MONOTONIC, one clock for
          // every process on the machine.
          {
            std::ofstream(marker(dir, round, rank) + ".tmp") << nowNs();
            ::rename((marker(dir, round, rank) + ".tmp").c_str(), marker(dir, round, rank).c_str());
          }
          pg->barrier()->wait();
          const int64_t left = nowNs();
          for (int r = 0; r < size; ++r) {
            std::ifstream in(marker(dir, round, r));
            int64_t arrived = 0;
            if (!(in >> arrived)) {
              ADD_FAILURE() << "round " << round << ": rank " << rank
                            << " left the barrier before rank " << r << " arrived (" << p.label()
                            << ", world size " << size << ")";
            } else {
              EXPECT_LE(arrived, left)
                  << "round " << round << ": rank " << rank << " left " << (arrived - left) / 1000
                  << " us before rank " << r << " arrived";
            }
          }
          if (::testing::Test::HasFailure()) return;
        }
        pg->barrier()->wait();  // no rank removes the directory while others still look
        if (rank == 0) {
          for (int round = 0; round < 3; ++round) {
            for (int r = 0; r < size; ++r) ::unlink(marker(dir, round, r).c_str());
          }
          ::rmdir(dir.c_str());
        }
      },
      mp);
}

class Barrier : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(Barrier, NoRankLeavesBeforeTheLastArrives) {
  staggeredBarriers(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

// Every conformance backend, plus verbs over shm with the dissemination barrier (the shm default
// is the workspace's futex barrier; tcp already runs dissemination).
std::vector<std::tuple<BackendParam, int>> barrierCases() {
  std::vector<std::tuple<BackendParam, int>> out = conformanceCases({2, 3, 5, 8});
  for (const BackendParam& p : conformanceBackends()) {
    if (p.backend != "verbs" || !p.variant.empty()) continue;
    BackendParam d = p;
    d.variant = "dissemination";
    d.config["C10D_ALGO"] = "barrier:dissemination";
    for (int ws : {3, 8}) out.emplace_back(d, ws);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, Barrier, ::testing::ValuesIn(barrierCases()),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Barrier);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
