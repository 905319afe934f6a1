// Test helper: runs a perf binary as real processes, one per rank, with the environment c10drun
// gives them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT on a free localhost port), and
// collects how each ended and what it printed. Every run is bounded by a timeout (the harness
// kills what is left: tests/common/multiproc.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

struct RunResult {
  std::vector<test::RankResult> ranks;
  std::string out0;  // rank 0's stdout
  std::string err;   // every rank's stderr
  bool allOk() const;
  bool anyExitedNonZero() const;
  // The exit code of every rank that exited (-1 for one that did not).
  std::vector<int> exitCodes() const;
};

// Runs `binary args` (a file of C10D_PERF_BIN_DIR) as `n` ranks; n = 0: one process with no
// launcher environment at all. `env` is set in every rank after the launcher's variables.
RunResult runPerf(const std::string& binary, int n, const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env = {});

// The mpirun on PATH ("" when there is none).
std::string findMpirun();

// Runs `mpirun --oversubscribe -np n <binary of C10D_PERF_BIN_DIR> args` (as root where need be)
// under `timeout` (SIGTERM after 60 s, so that mpirun takes its ranks down, SIGKILL 5 s later);
// `env` is set and exported to the ranks (-x). RunResult::ranks has the one mpirun process;
// out0 is the ranks' stdout (rank 0 prints), err their stderr.
RunResult runMpiPerf(const std::string& binary, int n, const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env = {});

// The whole contents of a file ("" if it cannot be read).
std::string readFile(const std::string& path);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
