// Test helper: runs a function in N real, forked processes (one per rank) and reports how each
// ended. Used by every multi-process test (stores, backends, tools).
//
// The child runs `fn(rank, size)`; it exits 0 when fn returns without a GoogleTest failure, 1 when
// an assertion failed, 2 when fn threw (the exception's message is printed with the rank). The
// parent waits for all children up to `timeout` (times testTimeoutScale()), then SIGKILLs the
// rest and reports them as hung: a test can never hang the suite.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct RankResult {
  int rank = -1;
  bool exited = false;    // exited normally (else: killed by a signal)
  int exitCode = -1;      // when exited
  int signal = 0;         // when killed
  bool timedOut = false;  // still running at the deadline, killed by the harness
  bool ok() const { return exited && exitCode == 0 && !timedOut; }
  std::string describe() const;
};

struct MultiProcOptions {
  std::chrono::milliseconds timeout{60000};
  // Called in the parent after all children are forked (e.g. to kill one of them); receives the
  // children's pids by rank.
  std::function<void(const std::vector<int>& pids)> afterFork;
};

// What every harness deadline is multiplied by: C10D_TEST_TIMEOUT_SCALE (a number > 0) when set,
// else the build's default (1; 2 under ASan/UBSan, 4 under TSan: see tests/CMakeLists.txt, which
// scales the ctest TIMEOUTs the same way). runRanks applies it to MultiProcOptions::timeout.
double testTimeoutScale();
// `t` times testTimeoutScale().
std::chrono::milliseconds scaledTimeout(std::chrono::milliseconds t);

// Forks `size` children running fn(rank, size) and waits for them (see above).
std::vector<RankResult> runRanks(int size, const std::function<void(int rank, int size)>& fn,
                                 const MultiProcOptions& options = {});

// runRanks, then a GoogleTest failure for every rank that did not end ok.
void expectAllRanksOk(int size, const std::function<void(int rank, int size)>& fn,
                      const MultiProcOptions& options = {});

// A fresh path, unique per call, inside a directory this process made with mkdtemp
// ("$TMPDIR/c10d-test-<pid>-XXXXXX/<n>-tag"; nothing created at the path itself). The directory
// and everything in it is removed when the process that made it exits.
std::string uniqueTempPath(const std::string& tag);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
