// train_mlp's memory, measured on the processes themselves (RSS from /proc, the "memory:" line):
// ZeRO-3 never holds the whole model on one rank, not at start-up (the model is made one layer
// at a time), not in the final checksum and evaluation (one layer gathered at a time), not while
// writing a checkpoint. The model is 12 layers of 768 (6.5M parameters, 25 MiB of fp32) on two
// ranks: the whole model, or its gradients, held at once would raise a phase's peak by 25 MiB or
// more, while a training step holds the shards, the Adam state and at most four layers (2.25 MiB
// each) beyond them. So each other phase's peak must stay within one layer (2.25 MiB) of the
// training steps' peak: a checkpoint's writer holds two layers' parameters (the next one's gather
// in flight) or one layer's Adam state and a slot's gather buffer.
//
// glibc's malloc keeps freed blocks of up to 32 MiB for reuse (its mmap threshold rises as such
// blocks are freed), which would hide a new allocation in memory already resident; the test fixes
// the threshold (GLIBC_TUNABLES) so that every buffer of 64 KiB or more is mapped and unmapped, and
// RSS follows what the process holds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/examples/train_mlp_runner.h"

namespace c10d {
namespace test {
namespace {

// "<phase> peak <v> MiB" in the memory line: v, or -1 if absent.
double phasePeakMiB(const std::string& line, const std::string& phase) {
  const std::string key = phase + " peak ";
  const size_t at = line.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + key.size(), nullptr);
}

TEST(TrainMlpMemory, Zero3NeverHoldsTheWholeModel) {
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536", 1);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("train_mlp_memory_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  const Training t = runTraining(2, {"--mode",
                                     "zero3",
                                     "--hidden",
                                     "768",
                                     "--layers",
                                     "12",
                                     "--steps",
                                     "2",
                                     "--global-batch",
                                     "8",
                                     "--dataset-size",
                                     "64",
                                     "--eval-size",
                                     "64",
                                     "--optimizer",
                                     "adam",
                                     "--checkpoint-dir",
                                     dir,
                                     "--checkpoint-every",
                                     "1"});
  std::filesystem::remove_all(dir);
  ::unsetenv("GLIBC_TUNABLES");
  ASSERT_TRUE(t.ok()) << t.describe();
  const std::string line = t.line("memory: rank 0:");
  ASSERT_FALSE(line.empty()) << t.describe();
  if (line.find("clear_refs refused") != std::string::npos) {
    GTEST_SKIP() << "/proc/self/clear_refs is refused here: no per-phase peaks: " << line;
  }
  const double training = phasePeakMiB(line, "training");
  ASSERT_GT(training, 0) << line;
  constexpr double kSlackMiB = 768.0 * 768 * 4 / (1 << 20);  // one layer's parameters
  for (const char* phase : {"start-up", "checkpoints", "evaluation"}) {
    const double peak = phasePeakMiB(line, phase);
    ASSERT_GT(peak, 0) << phase << " missing: " << line;
    EXPECT_LE(peak, training + kSlackMiB)
        << "the " << phase << " peak (" << peak << " MiB) is above the training steps' ("
        << training << " MiB) by more than a layer (the whole model is 25 MiB)\n"
        << line;
  }
}

}  // namespace
}  // namespace test
}  // namespace c10d
