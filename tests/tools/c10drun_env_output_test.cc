// c10drun: environment of the workers, output prefixing, option parsing. Every test runs the real
// launcher binary on the real worker program (c10drun_test_worker).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <map>
#include <set>
#include <sstream>

#include "c10d/base/abi.h"
#include "tests/tools/launcher_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Env = std::map<std::string, std::string>;

// Parses "[rankR]: KEY=V KEY=V ..." lines printed by the worker's env mode, keyed by R.
std::map<int, Env> parseEnvLines(const std::string& out) {
  std::map<int, Env> byRank;
  for (const std::string& line : splitLines(out)) {
    int rank = -1;
    std::string rest;
    if (!parsePrefixed(line, &rank, &rest)) {
      ADD_FAILURE() << "unprefixed line: '" << line << "'";
      continue;
    }
    EXPECT_EQ(byRank.count(rank), 0u) << "rank " << rank << " printed twice";
    std::istringstream words(rest);
    std::string kv;
    while (words >> kv) {
      auto eq = kv.find('=');
      byRank[rank][kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return byRank;
}

TEST(C10drunEnv, SetsRankVariablesForEachWorldSize) {
  for (int n = 1; n <= 4; ++n) {
    SCOPED_TRACE("nproc-per-node " + std::to_string(n));
    LauncherRun run = runLauncher({"--nproc-per-node", std::to_string(n), workerPath(), "env"});
    ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();
    EXPECT_EQ(run.err, "");
    std::map<int, Env> env = parseEnvLines(run.out);
    ASSERT_EQ(env.size(), static_cast<size_t>(n)) << run.out;
    std::set<std::string> ports;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(env.count(r), 1u) << "no output from rank " << r << "\n" << run.out;
      Env& e = env[r];
      EXPECT_EQ(e["RANK"], std::to_string(r));
      EXPECT_EQ(e["LOCAL_RANK"], std::to_string(r));
      EXPECT_EQ(e["WORLD_SIZE"], std::to_string(n));
      EXPECT_EQ(e["LOCAL_WORLD_SIZE"], std::to_string(n));
      EXPECT_EQ(e["GROUP_RANK"], "0");
      EXPECT_EQ(e["MASTER_ADDR"], "127.0.0.1");
      EXPECT_EQ(e["C10D_RESTART_COUNT"], "0");
      EXPECT_EQ(e["TORCHELASTIC_RESTART_COUNT"], "0");
      ports.insert(e["MASTER_PORT"]);
    }
    // One free port, the same for every rank.
    ASSERT_EQ(ports.size(), 1u);
    int port = std::stoi(*ports.begin());
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
  }
}

TEST(C10drunEnv, MultiNodeRankMathWithUnderscoreOptions) {
  LauncherRun run =
      runLauncher({"--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "3", "--master_addr",
                   "10.1.2.3", "--master_port", "29511", workerPath(), "env"});
  ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();
  std::map<int, Env> env = parseEnvLines(run.out);
  ASSERT_EQ(env.size(), 3u) << run.out;
  for (int local = 0; local < 3; ++local) {
    int rank = 3 + local;
    ASSERT_EQ(env.count(rank), 1u) << run.out;
    Env& e = env[rank];
    EXPECT_EQ(e["RANK"], std::to_string(rank));
    EXPECT_EQ(e["LOCAL_RANK"], std::to_string(local));
    EXPECT_EQ(e["WORLD_SIZE"], "6");
    EXPECT_EQ(e["LOCAL_WORLD_SIZE"], "3");
    EXPECT_EQ(e["GROUP_RANK"], "1");
    EXPECT_EQ(e["MASTER_ADDR"], "10.1.2.3");
    EXPECT_EQ(e["MASTER_PORT"], "29511");
  }
}

// The TCPStore secret (tools/c10drun/secret.h): one fresh secret per single-node job, the same
// for all its ranks; the user's passed through; none (and a note) for a multi-node job.
TEST(C10drunEnv, StoreSecretPerJob) {
  unsetenv("C10D_STORE_SECRET");
  std::set<std::string> jobs;
  for (int job = 0; job < 2; ++job) {
    LauncherRun run = runLauncher({"--nproc-per-node", "3", workerPath(), "env"});
    ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();
    std::map<int, Env> env = parseEnvLines(run.out);
    ASSERT_EQ(env.size(), 3u) << run.out;
    const std::string secret = env[0]["C10D_STORE_SECRET"];
    EXPECT_EQ(secret.size(), 64u) << secret;
    EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos) << secret;
    for (int r = 1; r < 3; ++r) EXPECT_EQ(env[r]["C10D_STORE_SECRET"], secret);
    EXPECT_EQ(run.err.find(secret), std::string::npos) << "the launcher printed the secret";
    jobs.insert(secret);
  }
  EXPECT_EQ(jobs.size(), 2u) << "two jobs got the same secret";

  setenv("C10D_STORE_SECRET", "users-secret", 1);
  LauncherRun given = runLauncher({"--nproc-per-node", "2", workerPath(), "env"});
  ASSERT_TRUE(given.exited && given.exitCode == 0) << given.describe();
  for (auto& [rank, e] : parseEnvLines(given.out))
    EXPECT_EQ(e["C10D_STORE_SECRET"], "users-secret");
  unsetenv("C10D_STORE_SECRET");

  LauncherRun multi = runLauncher({"--nnodes", "2", "--node-rank", "0", "--master-port", "29517",
                                   "--nproc-per-node", "1", workerPath(), "env"});
  ASSERT_TRUE(multi.exited && multi.exitCode == 0) << multi.describe();
  EXPECT_EQ(parseEnvLines(multi.out)[0]["C10D_STORE_SECRET"], "<unset>");
  EXPECT_NE(multi.err.find("c10drun: note: C10D_STORE_SECRET is not set; in a multi-node job "
                           "every node must set the same one"),
            std::string::npos)
      << multi.err;
}

TEST(C10drunOutput, PrefixesEveryLineWithoutInterleaving) {
  constexpr int kRanks = 4;
  constexpr int kLines = 400;
  LauncherRun run = runLauncher(
      {"--nproc-per-node", std::to_string(kRanks), workerPath(), "lines", std::to_string(kLines)});
  ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();

  // stdout: "[rankR]: outR line I <pad of rank R>" in order per rank, then "[rankR]: tailR".
  std::vector<int> next(kRanks, 0);
  std::vector<int> tails(kRanks, 0);
  for (const std::string& line : splitLines(run.out)) {
    int r = -1;
    std::string rest;
    ASSERT_TRUE(parsePrefixed(line, &r, &rest)) << "unprefixed line: '" << line << "'";
    ASSERT_TRUE(r >= 0 && r < kRanks) << line;
    if (rest == "tail" + std::to_string(r)) {
      ++tails[r];
      continue;
    }
    std::string pad(40 + 10 * r, static_cast<char>('a' + r));
    std::string expected =
        "out" + std::to_string(r) + " line " + std::to_string(next[r]) + " " + pad;
    ASSERT_EQ(rest, expected) << "rank " << r << ": mixed or out of order";
    ++next[r];
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(next[r], kLines) << "rank " << r;
    EXPECT_EQ(tails[r], 1) << "partial last line of rank " << r;
  }
  EXPECT_EQ(run.out.back(), '\n');

  // stderr: its own stream, prefixed the same way.
  std::vector<int> nextErr(kRanks, 0);
  for (const std::string& line : splitLines(run.err)) {
    int r = -1;
    std::string rest;
    ASSERT_TRUE(parsePrefixed(line, &r, &rest)) << "unprefixed line: '" << line << "'";
    ASSERT_TRUE(r >= 0 && r < kRanks) << line;
    ASSERT_EQ(rest, "err" + std::to_string(r) + " line " + std::to_string(nextErr[r]));
    ++nextErr[r];
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(nextErr[r], kLines) << "rank " << r;
}

TEST(C10drunOptions, ArgumentsAfterProgramAndDoubleDashPassThrough) {
  LauncherRun run = runLauncher(
      {"--nproc-per-node=1", "--", workerPath(), "argv", "--nproc-per-node", "7", "--", "x y"});
  ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();
  EXPECT_EQ(run.out, "[rank0]: --nproc-per-node\n[rank0]: 7\n[rank0]: --\n[rank0]: x y\n");
}

TEST(C10drunOptions, HelpPrintsUsageAndExitsZero) {
  LauncherRun run = runLauncher({"--help"});
  ASSERT_TRUE(run.exited && run.exitCode == 0) << run.describe();
  EXPECT_NE(run.out.find("Usage: c10drun [OPTIONS] [--] PROGRAM [ARGS...]"), std::string::npos);
  for (const char* word :
       {"--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port",
        "--max-restarts", "--monitor-interval-ms", "--grace-period-s", "Restarts are local"}) {
    EXPECT_NE(run.out.find(word), std::string::npos) << word;
  }
}

TEST(C10drunOptions, BadOptionsExitTwoWithMessage) {
  char noExec[] = "/tmp/c10drun-test-noexec-XXXXXX";  // a file without execute permission
  int fd = mkstemp(noExec);
  ASSERT_GE(fd, 0);
  close(fd);
  char badFormat[] = "/tmp/c10drun-test-badformat-XXXXXX";  // executable, but no valid format
  int bf = mkstemp(badFormat);
  ASSERT_GE(bf, 0);
  ASSERT_EQ(write(bf, "\x01\x02garbage", 9), 9);
  fchmod(bf, 0755);
  close(bf);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--nproc-per-node", "0", "true"}, "--nproc-per-node must be >= 1 (got 0)"},
      {{"--nproc-per-node", "abc", "true"}, "--nproc-per-node: not an integer: 'abc'"},
      {{"--nproc-per-node", "2x", "true"}, "--nproc-per-node: not an integer: '2x'"},
      {{"--nnodes", "1:many", "true"}, "--nnodes: not an integer: 'many'"},
      {{"--nnodes", "99999999999", "true"}, "--nnodes: not an integer: '99999999999'"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-port", "29500", "true"},
       "--node-rank 2 is out of range [0, 2)"},
      {{"--nnodes", "2", "--node-rank", "1", "true"}, "--master-port is required with --nnodes 2"},
      {{"--nnodes", "1:4", "true"}, "a node range needs a dynamic rendezvous"},
      {{"--master-port", "70000", "true"}, "--master-port must be in [1, 65535]"},
      {{"--max-restarts", "-1", "true"}, "--max-restarts must be >= 0"},
      {{"--grace-period-s", "-1", "true"}, "--grace-period-s must be in [0, 3600]"},
      {{"--monitor-interval-ms", "0", "true"}, "--monitor-interval-ms must be in"},
      {{"--bogus", "true"}, "unknown option '--bogus'"},
      {{"--nproc-per-node"}, "--nproc-per-node"},
      {{}, "missing PROGRAM"},
      {{"--nproc-per-node", "2", "--"}, "missing PROGRAM"},
      {{"no-such-program-c10drun"},
       "c10drun: cannot execute 'no-such-program-c10drun': No such file or directory"},
      {{noExec}, "c10drun: cannot execute '" + std::string(noExec) + "': Permission denied"},
      {{"--nproc-per-node", "2", badFormat},
       "c10drun: cannot execute '" + std::string(badFormat) + "': Exec format error"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    SCOPED_TRACE("c10drun " + joined);
    LauncherRun run = runLauncher(c.args);
    ASSERT_TRUE(run.exited) << run.describe();
    EXPECT_EQ(run.exitCode, 2) << run.describe();
    EXPECT_NE(run.err.find(c.message), std::string::npos) << run.describe();
    EXPECT_EQ(run.out, "");
  }
  unlink(noExec);
  unlink(badFormat);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
