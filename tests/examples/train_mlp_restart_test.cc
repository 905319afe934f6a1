// train_mlp, end to end: checkpoints, restarts and errors.
//   - a rank that dies mid-run (--crash-at-step) under c10drun --max-restarts 1: the job restarts,
//     resumes from the last checkpoint, and ends with exactly (bit for bit) the parameters and
//     final loss of an uninterrupted run, in ddp and zero mode;
//   - a checkpoint written at 2 ranks resumes at 4 (ddp, zero) and in one process, continuing the
//     one-process loss curve within the equivalence tolerance;
//   - mistakes are clear errors, never hangs: a bad mode, a global batch the world size does not
//     divide, a corrupt checkpoint (the file is named), a checkpoint of another model, local mode
//     on several ranks, and a crash with no restarts left.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/common/multiproc.h"
#include "tests/examples/train_mlp_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTol = 1e-5;  // see train_mlp_equivalence_test.cc

// A fresh directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() : path_(uniqueTempPath("train-mlp")) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct RestartCase {
  std::string mode;
  std::string gradReduction;  // zero only
};

void PrintTo(const RestartCase& c, std::ostream* os) {
  *os << c.mode << (c.gradReduction.empty() ? "" : " " + c.gradReduction);
}

class TrainMlpRestart : public ::testing::TestWithParam<RestartCase> {};

TEST_P(TrainMlpRestart, CrashedRankRestartsAndEndsBitIdentical) {
  const auto& [mode, gradReduction] = GetParam();
  std::vector<std::string> common = {"--mode", mode, "--steps", "20", "--seed", "3"};
  common = concat(common, {"--global-batch", "32", "--optimizer", "adamw", "--checkpoint-every",
                           "5", "--bucket-cap-kb", "4"});
  if (!gradReduction.empty()) common = concat(common, {"--grad-reduction", gradReduction});
  TempDir a, b;
  const Training whole = runTraining(2, concat(common, {"--checkpoint-dir", a.path()}));
  ASSERT_TRUE(whole.ok()) << whole.describe();
  const Training crashed =
      runTraining(2, concat(common, {"--checkpoint-dir", b.path(), "--crash-at-step", "12"}),
                  {"--max-restarts", "1"});
  ASSERT_TRUE(crashed.ok()) << crashed.describe();
  EXPECT_NE(crashed.run.err.find("[rank1]: train_mlp: rank 1: --crash-at-step 12: exiting with "
                                 "code 3"),
            std::string::npos)
      << crashed.describe();
  EXPECT_NE(crashed.run.err.find("restarting the local worker group (restart 1 of 1)"),
            std::string::npos)
      << crashed.describe();
  const std::string resumed = "resumed from " + b.path() + "/step-00000010 (step 10, written by " +
                              "2 ranks in " + mode + " mode)";
  EXPECT_NE(crashed.line(resumed), "") << crashed.describe();
  // Bit for bit: the same parameters, the same final loss, the same loss at every step (steps
  // 11-20 as printed by the second attempt).
  EXPECT_EQ(crashed.finalParams, whole.finalParams) << crashed.describe();
  EXPECT_EQ(crashed.finalLoss, whole.finalLoss) << crashed.describe();
  EXPECT_FALSE(crashed.finalLoss.empty());
  EXPECT_EQ(crashed.loss, whole.loss) << crashed.describe();
}

INSTANTIATE_TEST_SUITE_P(
    , TrainMlpRestart,
    ::testing::Values(RestartCase{"ddp", ""}, RestartCase{"zero", "reduce_scatter"},
                      RestartCase{"zero", "reduce_to_owner"}, RestartCase{"zero3", ""}),
    [](const ::testing::TestParamInfo<RestartCase>& info) {
      return info.param.mode +
             (info.param.gradReduction.empty() ? "" : "_" + info.param.gradReduction);
    });

struct ResumeCase {
  std::string writeMode;
  int writeRanks;
  std::string resumeMode;
  int resumeRanks;
};

void PrintTo(const ResumeCase& c, std::ostream* os) {
  *os << c.writeMode << " on " << c.writeRanks << " -> " << c.resumeMode << " on " << c.resumeRanks;
}

class TrainMlpResume : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(TrainMlpResume, CheckpointResumesAtAnotherWorldSize) {
  const ResumeCase& c = GetParam();
  const std::vector<std::string> common = {"--seed", "5",           "--global-batch",
                                           "32",     "--optimizer", "sgd"};
  TempDir dir;
  const Training first = runTraining(
      c.writeRanks, concat(common, {"--mode", c.writeMode, "--steps", "10", "--checkpoint-every",
                                    "10", "--checkpoint-dir", dir.path()}));
  ASSERT_TRUE(first.ok()) << first.describe();
  const Training resumed = runTraining(
      c.resumeRanks,
      concat(common, {"--mode", c.resumeMode, "--steps", "20", "--checkpoint-dir", dir.path()}));
  ASSERT_TRUE(resumed.ok()) << resumed.describe();
  EXPECT_NE(resumed.line("resumed from " + dir.path() + "/step-00000010 (step 10, written by " +
                         std::to_string(c.writeRanks) + " ranks in " + c.writeMode + " mode)"),
            "")
      << resumed.describe();
  const Training reference = runTraining(1, concat(common, {"--mode", "local", "--steps", "20"}));
  ASSERT_TRUE(reference.ok()) << reference.describe();
  // Steps 11-20 only, each within the equivalence tolerance of the one-process run.
  ASSERT_EQ(resumed.loss.size(), 10u) << resumed.describe();
  EXPECT_EQ(resumed.loss.begin()->first, 11u);
  for (const auto& [step, text] : resumed.loss) {
    EXPECT_NEAR(resumed.lossAt(step), reference.lossAt(step), kRelTol * reference.lossAt(step))
        << "step " << step;
  }
  EXPECT_NEAR(resumed.finalLossValue(), reference.finalLossValue(),
              kRelTol * reference.finalLossValue());
}

INSTANTIATE_TEST_SUITE_P(, TrainMlpResume,
                         ::testing::Values(ResumeCase{"ddp", 2, "ddp", 4},
                                           ResumeCase{"zero", 2, "zero", 4},
                                           ResumeCase{"zero", 2, "local", 1},
                                           ResumeCase{"zero3", 2, "zero3", 4},
                                           ResumeCase{"zero3", 4, "ddp", 2}),
                         [](const ::testing::TestParamInfo<ResumeCase>& info) {
                           const ResumeCase& c = info.param;
                           return c.writeMode + std::to_string(c.writeRanks) + "_to_" +
                                  c.resumeMode + std::to_string(c.resumeRanks);
                         });

// Every failure: a non-zero exit within seconds, the message on stderr.
void expectFails(const Training& t, int exitCode, const std::vector<std::string>& parts) {
  EXPECT_FALSE(t.run.timedOut) << t.describe();
  EXPECT_TRUE(t.run.exited) << t.describe();
  EXPECT_EQ(t.run.exitCode, exitCode) << t.describe();
  EXPECT_LT(t.run.seconds, 30.0) << t.describe();
  for (const std::string& p : parts) {
    EXPECT_NE(t.run.err.find(p), std::string::npos) << "stderr lacks '" << p << "'\n"
                                                    << t.describe();
  }
  EXPECT_TRUE(t.finalLoss.empty()) << t.describe();
}

TEST(TrainMlpErrors, BadModeIsAUsageError) {
  expectFails(runTraining(1, {"--mode", "fsdp"}), 2,
              {"[rank0]: train_mlp: --mode 'fsdp': expected local, ddp, zero (zero2) or zero3"});
}

TEST(TrainMlpErrors, GlobalBatchNotDivisibleByTheWorldSize) {
  const Training t = runTraining(4, {"--mode", "ddp", "--global-batch", "30"});
  expectFails(t, 1, {"--global-batch 30 is not divisible by the world size 4"});
  // Raised before any collective: no rank waits for the others (the launcher stops the ranks
  // still running when the first one fails, so how many print it is a race).
  EXPECT_GE(countOf(t.run.err, "is not divisible by the world size 4"), 1) << t.describe();
}

TEST(TrainMlpErrors, LocalModeOnSeveralRanks) {
  expectFails(runTraining(2, {"--mode", "local"}), 1,
              {"--mode local runs in one process, but WORLD_SIZE=2"});
}

TEST(TrainMlpErrors, CorruptCheckpointNamesTheFile) {
  TempDir dir;
  const std::vector<std::string> args = {"--mode",           "ddp",     "--global-batch", "32",
                                         "--checkpoint-dir", dir.path()};
  const Training first = runTraining(2, concat(args, {"--steps", "5", "--checkpoint-every", "5"}));
  ASSERT_TRUE(first.ok()) << first.describe();
  const std::string model = dir.path() + "/step-00000005/model.bin";
  {
    std::fstream f(model, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-100, std::ios::end);  // a parameter's bytes
    f.write("\x7f", 1);
  }
  const Training t = runTraining(2, concat(args, {"--steps", "10"}));
  expectFails(t, 1, {"checkpoint " + model + ": checksum mismatch"});

  // A truncated optimizer state names its own file.
  fs::remove_all(dir.path());
  ASSERT_TRUE(runTraining(2, concat(args, {"--steps", "5", "--checkpoint-every", "5"})).ok());
  const std::string optimizer = dir.path() + "/step-00000005/optimizer.bin";
  fs::resize_file(optimizer, fs::file_size(optimizer) / 2);
  expectFails(runTraining(2, concat(args, {"--steps", "10"})), 1, {optimizer, "truncated"});

  // zero3 opens the checkpoint and reads shards: rank 0 alone checks the checksums (and tells the
  // other ranks, though the launcher may stop them first).
  fs::remove_all(dir.path());
  const std::vector<std::string> zero3 = {"--mode",           "zero3",   "--global-batch", "32",
                                          "--checkpoint-dir", dir.path()};
  ASSERT_TRUE(runTraining(2, concat(zero3, {"--steps", "5", "--checkpoint-every", "5"})).ok());
  {
    std::fstream f(model, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-100, std::ios::end);
    f.write("\x7f", 1);
  }
  expectFails(runTraining(2, concat(zero3, {"--steps", "10"})), 1,
              {"checkpoint " + model + ": checksum mismatch"});
}

TEST(TrainMlpErrors, CheckpointOfAnotherModel) {
  TempDir dir;
  ASSERT_TRUE(runTraining(1, {"--mode", "local", "--steps", "2", "--checkpoint-every", "2",
                              "--checkpoint-dir", dir.path()})
                  .ok());
  expectFails(runTraining(1, {"--mode", "local", "--steps", "4", "--hidden", "64", "--layers", "3",
                              "--checkpoint-dir", dir.path()}),
              1,
              {"checkpoint " + dir.path() +
               "/step-00000002 holds a 32-128-128-10 model but this "
               "run builds 32-64-64-10"});
  expectFails(runTraining(1, {"--mode", "local", "--steps", "4", "--seed", "9", "--checkpoint-dir",
                              dir.path()}),
              1, {"was written with --seed 0, this run has --seed 9"});
}

TEST(TrainMlpErrors, CrashWithoutRestartsFailsTheJob) {
  expectFails(runTraining(2, {"--mode", "ddp", "--steps", "5", "--crash-at-step", "3"}), 3,
              {"--crash-at-step 3: exiting with code 3", "c10drun: rank 1 (pid ",
               "failed: exited with code 3"});
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
