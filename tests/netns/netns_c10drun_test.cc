// Multi-node c10drun on virtual hosts: one launcher per host (--nnodes 2 --node-rank i), the
// master addressed by host name as users do, workers that check their results. Then a host's
// launcher SIGKILLed mid-job: the other host's launcher must exit non-zero, naming its failed
// worker, whose error names a rank of the dead host; nothing hangs.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/netns/netns_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

#ifdef C10DRUN_PATH

using Clock = std::chrono::steady_clock;

// One launcher per host; `program` is what each of its `nproc` workers runs.
std::vector<HostCommand> launchers(int nodes, int nproc, const std::vector<std::string>& program,
                                   const std::map<std::string, std::string>& env) {
  std::vector<HostCommand> cmds;
  for (int i = 0; i < nodes; ++i) {
    HostCommand c;
    c.host = i;
    c.tag = "c10drun";
    c.argv = {C10DRUN_PATH,          "--nnodes",        std::to_string(nodes),
              "--node-rank",         std::to_string(i), "--nproc-per-node",
              std::to_string(nproc), "--master-addr",   VirtualHosts::hostname(0),
              "--master-port",       kMasterPort};
    c.argv.insert(c.argv.end(), program.begin(), program.end());
    c.env = env;
    // Multi-node jobs share the store's secret (c10drun --help).
    c.env["C10D_STORE_SECRET"] = "netns-c10drun-test";
    c.env["C10D_NETNS_HOST"] = VirtualHosts::hostname(i);
    cmds.push_back(c);
  }
  return cmds;
}

TEST(NetnsC10drun, TwoNodesRunAllReducePerfWithChecks) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts vh(2);
  auto results = vh.runAll(launchers(2, 2,
                                     {ALL_REDUCE_PERF_PATH, "-b", "8", "-e", "1M", "-f", "32", "-c",
                                      "1", "-n", "3", "-w", "1", "--backend", "verbs"},
                                     {}),
                           std::chrono::seconds(60));
  expectAllOk(results);
  // Rank 0 prints the table: 4 sizes (8 B .. 1 MiB), each checked ("#wrong" 0, never N/A).
  const std::string& out = results[0].output;
  EXPECT_NE(out.find("world size 4"), std::string::npos) << results[0].describe();
  std::regex row("\\[rank0\\]: +(\\d+) +\\d+ +float +sum .* (\\d+|N/A)\\s*$");
  int rows = 0;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, row)) continue;
    ++rows;
    EXPECT_EQ(m[2], "0") << l;
  }
  EXPECT_EQ(rows, 4) << results[0].describe();
}

TEST(NetnsC10drun, LauncherKilledOnOneHostFailsTheOtherWithoutHanging) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts vh(2);
  const std::string ready = uniqueTempPath("netns-ready");
  std::vector<VirtualHosts::Process> procs;
  for (const auto& c : launchers(2, 2, {NETNS_WORKER_PATH},
                                 {{"C10D_NETNS_MODE", "fail"},
                                  {"C10D_NETNS_BACKEND", "verbs"},
                                  {"C10D_NETNS_READY", ready},
                                  {"C10D_NETNS_ERROR_EXIT", "7"},
                                  {"C10D_NETNS_TIMEOUT_MS", "30000"}}))
    procs.push_back(vh.start(c));
  const auto readyBy = Clock::now() + std::chrono::seconds(30);
  for (int r = 0; r < 4; ++r) {
    struct stat st;
    while (stat((ready + "." + std::to_string(r)).c_str(), &st) != 0) {
      if (Clock::now() > readyBy) {
        for (auto& p : procs) ADD_FAILURE() << vh.wait(p, Clock::now()).describe();
        FAIL() << "rank " << r << " never finished its first allreduce";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  vh.kill(procs[1]);
  const auto killed = Clock::now();
  HostResult survivor = vh.wait(procs[0], killed + std::chrono::seconds(20));
  const double s = std::chrono::duration<double>(Clock::now() - killed).count();
  HostResult victim = vh.wait(procs[1], Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(victim.signal, SIGKILL) << victim.describe();
  ASSERT_FALSE(survivor.timedOut) << survivor.describe();
  EXPECT_TRUE(survivor.exited && survivor.exitCode == 7) << survivor.describe();
  // Well before the group's 30 s timeout: the dead host's connections were reset.
  EXPECT_LT(s, 15.0) << survivor.describe();
  // The worker's error names a rank of host1; the launcher names the worker that failed.
  EXPECT_TRUE(
      std::regex_search(survivor.output, std::regex("NETNS-ERROR CommError .*rank [23]\\b")))
      << survivor.describe();
  EXPECT_TRUE(std::regex_search(survivor.output,
                                std::regex("c10drun: .*rank [01]\\b.*exit(ed)? (with )?(code )?7")))
      << survivor.describe();
}

#endif  // C10DRUN_PATH

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
