// Test helper: runs build/bin/train_mlp under build/bin/c10drun as real child processes (through
// tests/tools/launcher_runner.h, bounded by a deadline) and parses what rank 0 printed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/tools/launcher_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct Training {
  LauncherRun run;
  std::vector<std::string> rank0;        // rank 0's stdout lines, without the "[rank0]: " prefix
  std::map<uint64_t, std::string> loss;  // "step <k> loss <v>": k -> v as printed (last attempt's)
  std::string finalLoss;                 // "final loss <v>"
  std::string finalParams;               // "final params <checksum>"

  bool ok() const { return run.exited && run.exitCode == 0 && !run.timedOut; }
  double lossAt(uint64_t step) const;
  double finalLossValue() const;
  // The first rank-0 line containing `needle` ("" if none).
  std::string line(const std::string& needle) const;
  std::string describe() const { return run.describe(); }
};

// c10drun --nproc-per-node N [launcherArgs...] train_mlp args...
Training runTraining(int nproc, const std::vector<std::string>& args,
                     const std::vector<std::string>& launcherArgs = {});

// a + b
std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
