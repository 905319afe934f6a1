// train_mlp's memory, measured on the processes themselves (RSS from /proc, the "memory:" line):
// ZeRO-3 never holds the whole model on one rank, not at start-up (the model is made one layer
// at a time), not in the final checksum and evaluation (one layer gathered at a time), not while
// writing a checkpoint, not while resuming from one (each rank reads its shards from the files).
// ZeRO-2 never holds every full gradient, not even at start-up (with 4 MiB buckets a step holds
// the gradients of about two buckets; the default 25 MiB bucket would hold this whole model's).
// The model is 12 layers of 768
// (6.5M parameters, 25 MiB of fp32) on two ranks: the whole model, or its gradients, held at once
// would raise a phase's peak by 25 MiB or more, while a training step holds the shards, the Adam
// state and at most four layers (2.25 MiB each) beyond them. So each other phase's peak must stay
// within one layer (2.25 MiB) of the training steps' peak: a checkpoint's writer holds two layers'
// parameters (the next one's gather in flight) or one layer's Adam state and a slot's gather
// buffer.
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

#include "c10d/base/abi.h"
#include "tests/examples/train_mlp_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

// "<phase> peak <v> MiB" in the memory line: v, or -1 if absent.
double phasePeakMiB(const std::string& line, const std::string& phase) {
  const std::string key = phase + " peak ";
  const size_t at = line.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + key.size(), nullptr);
}

constexpr double kLayerMiB = 768.0 * 768 * 4 / (1 << 20);  // one layer's parameters

const std::vector<std::string> kModel = {"--hidden",       "768", "--layers",       "12",
                                         "--global-batch", "8",   "--dataset-size", "64",
                                         "--eval-size",    "64",  "--optimizer",    "adam"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs train_mlp on two ranks with malloc mapping every large buffer; rank 0's memory line.
std::string memoryLine(const std::vector<std::string>& args) {
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536", 1);
  const Training t = runTraining(2, concat(kModel, args));
  ::unsetenv("GLIBC_TUNABLES");
  EXPECT_TRUE(t.ok()) << t.describe();
  const std::string line = t.line("memory: rank 0:");
  EXPECT_FALSE(line.empty()) << t.describe();
  return line;
}

// Each phase's peak within one layer of the training steps' peak.
void expectPhasesWithinALayer(const std::string& line, const std::vector<std::string>& phases,
                              const std::string& what) {
  const double training = phasePeakMiB(line, "training");
  ASSERT_GT(training, 0) << line;
  for (const std::string& phase : phases) {
    const double peak = phasePeakMiB(line, phase);
    ASSERT_GT(peak, 0) << phase << " missing: " << line;
    EXPECT_LE(peak, training + kLayerMiB)
        << what << ": the " << phase << " peak (" << peak << " MiB) is above the training steps' ("
        << training << " MiB) by more than a layer (the whole model is 25 MiB)\n"
        << line;
  }
}

bool peaksRefused(const std::string& line) {
  return line.find("clear_refs refused") != std::string::npos;
}

TEST(TrainMlpMemory, Zero3NeverHoldsTheWholeModel) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("train_mlp_memory_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  const std::vector<std::string> ck = {
      "--mode", "zero3", "--checkpoint-dir", dir, "--checkpoint-every", "1"};
  const std::string line = memoryLine(concat(ck, {"--steps", "2"}));
  // Resumed from step 2's checkpoint: the start-up reads each rank's shards from the files.
  const std::string resumed = memoryLine(concat(ck, {"--steps", "3"}));
  std::filesystem::remove_all(dir);
  if (line.empty() || resumed.empty()) return;  // failed above
  if (peaksRefused(line)) {
    GTEST_SKIP() << "/proc/self/clear_refs is refused here: no per-phase peaks: " << line;
  }
  expectPhasesWithinALayer(line, {"start-up", "checkpoints", "evaluation"}, "zero3");
  expectPhasesWithinALayer(resumed, {"start-up"}, "zero3 resumed from a checkpoint");
}

TEST(TrainMlpMemory, Zero2NeverHoldsEveryGradient) {
  for (const char* reduction : {"reduce_scatter", "reduce_to_owner"}) {
    const std::string line = memoryLine({"--mode", "zero", "--grad-reduction", reduction,
                                         "--bucket-cap-kb", "4096", "--steps", "2"});
    if (line.empty()) return;  // failed above
    if (peaksRefused(line)) {
      GTEST_SKIP() << "/proc/self/clear_refs is refused here: no per-phase peaks: " << line;
    }
    expectPhasesWithinALayer(line, {"start-up"}, std::string("zero, ") + reduction);
  }
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
