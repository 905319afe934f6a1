// Faults only a network has, on virtual hosts: a host's link goes down in the middle of a stream
// of allreduces. No process dies and no socket is closed, so nothing tells the ranks: every rank,
// on both sides of the cut, must end the op with a named error (TimeoutError or CommError naming
// a peer across the cut) within the group's timeout plus a few seconds, never hang.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
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

using Clock = std::chrono::steady_clock;

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Waits until every rank has created `prefix`.<rank> (past its first allreduce).
void waitReady(const std::string& prefix, int ranks, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (int r = 0; r < ranks; ++r) {
    while (!exists(prefix + "." + std::to_string(r))) {
      ASSERT_LT(Clock::now(), deadline) << "rank " << r << " never finished its first allreduce";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Whether `message` names `peer`: "rank 3", "ranks 0, 2, 3", "ranks 0-2", "recv from rank 3".
bool namesRank(const std::string& message, int peer) {
  static const std::regex list("ranks? ((?:\\d+(?:-\\d+)?)(?:, \\d+(?:-\\d+)?)*)");
  for (std::sregex_iterator it(message.begin(), message.end(), list), end; it != end; ++it) {
    std::stringstream items((*it)[1].str());
    for (std::string item; std::getline(items, item, ',');) {
      int lo = 0, hi = 0;
      const int n = std::sscanf(item.c_str(), "%d-%d", &lo, &hi);
      if ((n == 1 && lo == peer) || (n == 2 && lo <= peer && peer <= hi)) return true;
    }
  }
  return false;
}

TEST(NetnsFaults, NamesRankReadsListsAndRanges) {
  EXPECT_TRUE(namesRank("pending: recv from rank 3 (1/2 bytes)", 3));
  EXPECT_TRUE(namesRank("ranks 0, 2, 3 are silent", 2));
  EXPECT_TRUE(namesRank("ranks 0-2 are silent", 1));
  EXPECT_FALSE(namesRank("ranks 0-2 are silent", 3));
  EXPECT_FALSE(namesRank("rank 13 waits; 3 bytes", 3));
}

// The error a rank printed ("NETNS-ERROR <kind> <seconds>: <message>"), checked: a named kind,
// within the timeout plus slack, naming a rank on the other side of the cut.
void expectNamedError(const HostResult& r, double timeoutS, const std::vector<int>& across) {
  std::smatch m;
  static const std::regex line("NETNS-ERROR (\\w+) ([0-9.]+): ([^\n]*)");
  ASSERT_TRUE(r.ok()) << r.describe();
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.describe();
  const std::string kind = m[1], message = m[3];
  const double seconds = std::stod(m[2]);
  EXPECT_TRUE(kind == "TimeoutError" || kind == "CommError") << r.describe();
  EXPECT_LT(seconds, timeoutS + 5.0) << r.describe();
  bool named = false;
  for (int peer : across) named = named || namesRank(message, peer);
  EXPECT_TRUE(named) << r.tag << ": the error names no rank across the cut: " << message;
}

void linkDownCase(const std::string& backend, const std::vector<int>& hostOf) {
  C10D_SKIP_WITHOUT_NETNS();
  constexpr int kTimeoutMs = 2500;
  VirtualHosts vh(2);
  const std::string ready = uniqueTempPath("netns-ready");
  std::vector<VirtualHosts::Process> procs;
  for (const auto& c : workerRanks(hostOf, {{"C10D_NETNS_MODE", "fail"},
                                            {"C10D_NETNS_BACKEND", backend},
                                            {"C10D_NETNS_READY", ready},
                                            {"C10D_NETNS_TIMEOUT_MS", std::to_string(kTimeoutMs)}}))
    procs.push_back(vh.start(c));
  const int size = static_cast<int>(hostOf.size());
  waitReady(ready, size, std::chrono::seconds(30));
  vh.setLink(1, false);
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(kTimeoutMs) + std::chrono::seconds(15);
  for (int r = 0; r < size; ++r) {
    HostResult res = vh.wait(procs[r], deadline);
    std::vector<int> across;
    for (int q = 0; q < size; ++q)
      if (hostOf[q] != hostOf[r]) across.push_back(q);
    expectNamedError(res, kTimeoutMs / 1000.0, across);
  }
}

TEST(NetnsFaults, VerbsLinkDownMidAllreduceTwoHostsOfOne) {
  linkDownCase("verbs", {0, 1});
}

TEST(NetnsFaults, VerbsLinkDownMidAllreduceTwoHostsOfTwo) {
  linkDownCase("verbs", {0, 0, 1, 1});
}

TEST(NetnsFaults, GlooLinkDownMidAllreduce) {
  linkDownCase("gloo", {0, 1});
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
