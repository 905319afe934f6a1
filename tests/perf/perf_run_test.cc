// End-to-end tests of the perf binaries: real processes (forked, exec'd, one per rank, with the
// environment c10drun gives them) over every CPU backend built here (verbs always, gloo where
// libgloo was found) on localhost. Rank 0's output must parse as nccl-tests' does, -c 1 must find
// no wrong element in a correct run, and must find the one C10D_PERF_INJECT_ERROR plants (and
// exit non-zero).
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/registry.h"
#include "perf/common/report.h"
#include "tests/perf/perf_process.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

std::vector<ParsedRow> rowsOf(const std::string& out) {
  std::vector<ParsedRow> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    ParsedRow r;
    if (parseRow(line, &r)) rows.push_back(r);
  }
  return rows;
}

// What a backend's ranks print on their "# Rank" line after "[cpu] " (all ranks on one host:
// verbs picks shm).
std::string described(const std::string& backend) {
  return backend == "verbs" ? "verbs/shm" : backend;
}

// The format and injected-error tests, once per CPU backend (skipped where it is not built).
class PerfRun : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!isBackendRegistered(backend())) GTEST_SKIP() << "backend " << backend() << " is not built";
  }
  std::string backend() const { return GetParam(); }
};

TEST_P(PerfRun, AllReduceTwoRanksParsesAsNcclTests) {
  const std::string json = test::uniqueTempPath("perf") + ".json";
  RunResult r = runPerf("all_reduce_perf", 2,
                        {"-b", "8", "-e", "64K", "-f", "4", "-n", "3", "-w", "1", "-c", "1",
                         "--backend", backend(), "-J", json});
  for (const auto& rr : r.ranks) EXPECT_TRUE(rr.ok()) << rr.describe() << "\n" << r.err;
  const std::string& out = r.out0;
  // The nccl-tests preamble, in order.
  std::istringstream in(out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GT(lines.size(), 12u) << out;
  EXPECT_EQ(lines[0], "# Collective test starting: all_reduce_perf");
  EXPECT_NE(out.find("# nThread 1 nGpus 1 minBytes 8 maxBytes 65536 step: 4(factor) warmup "
                     "iters: 1 iters: 3 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("#  Rank  0 Group  0 Pid "), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  1 Group  0 Pid "), std::string::npos) << out;
  EXPECT_NE(out.find("# c10d version "), std::string::npos) << out;
  EXPECT_NE(out.find(" backend " + backend() + " device cpu world size 2 launcher env\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("device  0 [cpu] " + described(backend()) + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("#       size         count      type   redop    root     time   algbw   "
                     "busbw  #wrong     time   algbw   busbw  #wrong \n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# Avg bus bandwidth    : "), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(
      out,
      std::regex("# Peak RSS per rank    : max [0-9.]+ MiB \\(rank [0-9]+\\), min [0-9.]+ MiB\n")))
      << out;
  EXPECT_NE(out.find("# Collective test concluded: all_reduce_perf\n"), std::string::npos);

  // Rows: 8, 32, ..., 32768 bytes (factor 4), float sum, root -1, no wrong element.
  std::vector<ParsedRow> rows = rowsOf(out);
  ASSERT_EQ(rows.size(), 7u) << out;
  size_t size = 8;
  for (const auto& row : rows) {
    EXPECT_EQ(row.size, size);
    EXPECT_EQ(row.count, size / 4);
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.redop, "sum");
    EXPECT_EQ(row.root, -1);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(row.wrong[k], 0);
      EXPECT_GT(row.time[k], 0);
      // busbw = algbw * 2(n-1)/n = algbw for n = 2 (up to the printed rounding).
      EXPECT_NEAR(row.busBw[k], row.algBw[k], 0.011);
    }
    size *= 4;
  }

  // The JSON file holds the same rows.
  std::ifstream jf(json);
  ASSERT_TRUE(jf.good()) << json;
  nlohmann::json doc = nlohmann::json::parse(jf);
  EXPECT_EQ(doc["backend"], backend());
  EXPECT_EQ(doc["world_size"], 2);
  EXPECT_EQ(doc["config"]["minimum_bytes"], 8);
  ASSERT_EQ(doc["results"].size(), rows.size());
  EXPECT_EQ(doc["results"][0]["size"], 8);
  EXPECT_EQ(doc["results"][6]["out_of_place"]["nwrong"], 0);
  EXPECT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["out_of_bounds"]["count"], 0);
  std::remove(json.c_str());
}

TEST_P(PerfRun, InjectedWrongElementIsCaughtAndFailsTheRun) {
  RunResult r = runPerf("all_reduce_perf", 2,
                        {"-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "--backend", backend()},
                        {{"C10D_PERF_INJECT_ERROR", "1"}});
  EXPECT_TRUE(r.anyExitedNonZero()) << r.out0;
  std::vector<ParsedRow> rows = rowsOf(r.out0);
  ASSERT_EQ(rows.size(), 3u) << r.out0 << r.err;
  for (const auto& row : rows) {
    EXPECT_EQ(row.wrong[0], 1);  // one element on one rank
    EXPECT_EQ(row.wrong[1], 1);
  }
  EXPECT_NE(r.out0.find("# Out of bounds values : 6 FAILED"), std::string::npos) << r.out0;

  // Without a check nothing is counted: "N/A", exit 0.
  RunResult n = runPerf("all_reduce_perf", 2,
                        {"-b", "1K", "-e", "1K", "-n", "2", "-c", "0", "--backend", backend()},
                        {{"C10D_PERF_INJECT_ERROR", "1"}});
  EXPECT_TRUE(n.allOk()) << n.err;
  rows = rowsOf(n.out0);
  ASSERT_EQ(rows.size(), 1u) << n.out0;
  EXPECT_EQ(rows[0].wrong[0], -1);
}

TEST_P(PerfRun, SingleProcessWithoutLauncher) {
  RunResult r = runPerf("all_reduce_perf", 0,
                        {"-b", "64", "-e", "256", "-f", "2", "-d", "all", "-o", "all", "-n", "2",
                         "--backend", backend()});
  EXPECT_TRUE(r.allOk()) << r.out0 << r.err;
  EXPECT_NE(r.out0.find("backend " + backend() + " device cpu world size 1 launcher none"),
            std::string::npos)
      << r.out0;
  const std::vector<ParsedRow> rows = rowsOf(r.out0);
  // 3 sizes x 8 types x 6 ops (every op the backend supports on every type).
  EXPECT_EQ(rows.size(), 3u * 8 * 6) << r.out0;
  for (const auto& row : rows) {
    EXPECT_EQ(row.wrong[0], 0) << row.type << " " << row.redop;
    EXPECT_EQ(row.wrong[1], 0) << row.type << " " << row.redop;
    EXPECT_EQ(row.busBw[0], 0);  // 2(n-1)/n = 0 for one rank
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PerfRun, testing::Values("gloo", "verbs"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// Each rank's "# Rank" line names what it ran on: for verbs, the transport it chose (shm for ranks
// sharing a host) or was told to use.
TEST(PerfRun, VerbsRankLinesNameTheTransport) {
  if (!isBackendRegistered("verbs")) GTEST_SKIP() << "the verbs backend is not built";
  const std::vector<std::string> args{"-b", "1K", "-e", "1K", "-n", "2", "--backend", "verbs"};
  for (const std::string transport : {"", "tcp"}) {
    std::vector<std::pair<std::string, std::string>> env;
    if (!transport.empty()) env.emplace_back("C10D_TRANSPORT", transport);
    RunResult r = runPerf("all_reduce_perf", 2, args, env);
    EXPECT_TRUE(r.allOk()) << r.out0 << r.err;
    const std::string want = "[cpu] verbs/" + (transport.empty() ? "shm" : transport);
    size_t lines = 0;
    std::istringstream in(r.out0);
    for (std::string l; std::getline(in, l);) {
      if (l.rfind("#  Rank ", 0) != 0) continue;
      ++lines;
      EXPECT_TRUE(l.size() >= want.size() &&
                  l.compare(l.size() - want.size(), want.size(), want) == 0)
          << l << " does not end with " << want;
    }
    EXPECT_EQ(lines, 2u) << r.out0;
  }
}

// --print-config prints the backend's settings as the environment sets them (verbs: and its
// algorithm table, C10D_ALGO rules included) and exits without a rendezvous; a malformed setting
// is an error naming it.
TEST(PerfRun, PrintConfigShowsSettingsAndTheAlgorithmTable) {
  if (!isBackendRegistered("verbs")) GTEST_SKIP() << "the verbs backend is not built";
  RunResult r = runPerf("all_reduce_perf", 0, {"--backend", "verbs", "--print-config"},
                        {{"C10D_ALGO", "allreduce:0-4K:recursive_doubling,4K-inf:ring"}});
  ASSERT_EQ(r.exitCodes(), std::vector<int>{0}) << r.out0 << r.err;
  for (const char* want :
       {"# backend verbs: ", "C10D_TRANSPORT", "C10D_ALGO",
        "allreduce:0-4K:recursive_doubling,4K-inf:ring", "    override: 0-4K -> recursive_doubling",
        "    override: 4K-inf -> ring", "  barrier\n", "algorithm dissemination:"})
    EXPECT_NE(r.out0.find(want), std::string::npos) << want << " not in:\n" << r.out0;
  EXPECT_EQ(r.out0.find("# Rank"), std::string::npos) << "it ran: " << r.out0;

  RunResult bad = runPerf("all_reduce_perf", 0, {"--backend", "verbs", "--print-config"},
                          {{"C10D_ALGO", "allreduce:4K-1K:ring"}});
  EXPECT_EQ(bad.exitCodes(), std::vector<int>{2}) << bad.out0 << bad.err;
  EXPECT_NE(bad.err.find("C10D_ALGO rule 'allreduce:4K-1K:ring': the range 4K-1K is empty"),
            std::string::npos)
      << bad.err;
  if (isBackendRegistered("gloo")) {
    RunResult g = runPerf("all_reduce_perf", 0, {"--backend", "gloo", "--print-config"});
    EXPECT_EQ(g.exitCodes(), std::vector<int>{0}) << g.out0 << g.err;
    EXPECT_NE(g.out0.find("# backend gloo: "), std::string::npos) << g.out0;
    EXPECT_NE(g.out0.find("gloo."), std::string::npos) << g.out0;
  }
}

// Every collective on every backend built here, on an odd number of ranks, odd sizes, a non-zero
// root, checked.
class PerfEveryCollective : public testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(PerfEveryCollective, ThreeRanksCheckClean) {
  const std::string backend = std::get<0>(GetParam());
  if (!isBackendRegistered(backend)) GTEST_SKIP() << "backend " << backend << " is not built";
  const std::string bin = std::string(std::get<1>(GetParam())) + "_perf";
  RunResult r = runPerf(bin, 3,
                        {"-b", "100", "-e", "40000", "-f", "20", "-n", "2", "-r", "1", "-d",
                         "int32", "--backend", backend});
  EXPECT_TRUE(r.allOk()) << r.out0 << r.err;
  std::vector<ParsedRow> rows = rowsOf(r.out0);
  ASSERT_EQ(rows.size(), 3u) << r.out0 << r.err;
  for (const auto& row : rows) {
    EXPECT_EQ(row.wrong[0], 0) << r.out0;
    EXPECT_TRUE(row.wrong[1] == 0 || row.wrong[1] == -1) << r.out0;
  }
  // The rank line names the backend (and, for verbs, its transport: all 3 ranks share a host).
  EXPECT_NE(r.out0.find("device  0 [cpu] " + described(backend) + "\n"), std::string::npos)
      << r.out0;
  EXPECT_NE(r.out0.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out0;
}

INSTANTIATE_TEST_SUITE_P(Perf, PerfEveryCollective,
                         testing::Combine(testing::Values("gloo", "verbs"),
                                          testing::Values("all_reduce", "all_gather", "broadcast",
                                                          "reduce", "reduce_scatter", "alltoall",
                                                          "gather", "scatter", "sendrecv")),
                         [](const testing::TestParamInfo<PerfEveryCollective::ParamType>& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
