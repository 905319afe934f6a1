// Unit tests of train_mlp's pieces (examples/train_mlp), each against a reference computed here:
// the hand-written backward against central finite differences, the order and timing of its
// ready reports, the batch plan's "union over ranks = the one-process batch" property, the
// synthetic data's determinism, and the checkpoint files' round trip and corruption checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "examples/train_mlp/checkpoint.h"
#include "examples/train_mlp/dataset.h"
#include "examples/train_mlp/model.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {
namespace {

namespace fs = std::filesystem;

MlpShape tinyShape() {
  MlpShape s;
  s.inputDim = 5;
  s.hidden = 7;
  s.layers = 3;
  s.classes = 4;
  return s;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch randomBatch(const MlpShape& shape, size_t n, uint64_t seed) {
  DatasetOptions d;
  d.seed = seed;
  d.trainSize = n;
  d.evalSize = 1;
  d.inputDim = shape.inputDim;
  d.classes = shape.classes;
  SyntheticDataset data(d);
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  Batch b;
  data.gather(all, &b.x, &b.y);
  return b;
}

void expectBackwardMatchesFiniteDifferences(const MlpShape& shape) {
  Mlp model(shape);
  model.initialize(3);
  const Batch b = randomBatch(shape, 6, 11);
  model.forward(b.x.data(), b.y.data(), 6);
  model.backward([](size_t) {});
  const std::vector<float> grads(model.grads(), model.grads() + model.numel());

  // Central differences of the mean loss, one parameter element at a time. The loss is computed
  // in double from fp32 activations: with h = 1e-2 the truncation error (O(h^2)) and the fp32
  // rounding (~1e-7 / h) both stay near 1e-5, far below the gradients' scale (~1e-2).
  const float h = 1e-2f;
  size_t checked = 0;
  for (size_t i = 0; i < model.numel(); ++i) {
    float* p = model.params() + i;
    const float saved = *p;
    const float hi = saved + h;  // the steps actually taken, after fp32 rounding
    const float lo = saved - h;
    *p = hi;
    const double up = model.forward(b.x.data(), b.y.data(), 6);
    *p = lo;
    const double down = model.forward(b.x.data(), b.y.data(), 6);
    *p = saved;
    const double numeric = (up - down) / (static_cast<double>(hi) - lo);
    // A ReLU kink inside [-h, h] makes the difference quotient meaningless there: skip elements
    // whose one-sided quotients disagree.
    const double center = model.forward(b.x.data(), b.y.data(), 6);
    const double left = (center - down) / (static_cast<double>(saved) - lo);
    const double right = (up - center) / (static_cast<double>(hi) - saved);
    if (std::abs(left - right) > 1e-2) continue;
    EXPECT_NEAR(grads[i], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << "parameter element " << i;
    ++checked;
  }
  EXPECT_GT(checked, model.numel() * 3 / 4) << "too many elements skipped at ReLU kinks";
}

TEST(TrainMlpModel, BackwardMatchesFiniteDifferences) {
  expectBackwardMatchesFiniteDifferences(tinyShape());
}

// --sync-bn alone: the batch norm's backward (through its batch statistics) and bn0's gradients.
TEST(TrainMlpModel, BackwardWithBatchNormMatchesFiniteDifferences) {
  MlpShape shape = tinyShape();
  shape.batchNorm = true;
  expectBackwardMatchesFiniteDifferences(shape);
}

TEST(TrainMlpModel, ReportsEachGradientOnceInReverseOrderWhenFinal) {
  Mlp model(tinyShape());
  model.initialize(5);
  const Batch b = randomBatch(model.shape(), 4, 2);
  model.forward(b.x.data(), b.y.data(), 4);
  std::vector<size_t> order;
  std::vector<std::vector<float>> atReport(model.numParameters());
  model.backward([&](size_t p) {
    order.push_back(p);
    const float* g = model.grads() + model.offset(p);
    atReport[p].assign(g, g + model.numels()[p]);
  });
  std::vector<size_t> reverse;
  for (size_t p = model.numParameters(); p-- > 0;) reverse.push_back(p);
  EXPECT_EQ(order, reverse);  // the DDP Reducer's bucket order: rebuilt buckets stay the same
  for (size_t p = 0; p < model.numParameters(); ++p) {
    const float* g = model.grads() + model.offset(p);
    EXPECT_EQ(atReport[p], std::vector<float>(g, g + model.numels()[p]))
        << model.name(p) << " changed after it was reported ready";
  }
}

TEST(TrainMlpModel, SameSeedSameBitsAndShapeChecks) {
  Mlp a(tinyShape()), b(tinyShape()), c(tinyShape());
  a.initialize(9);
  b.initialize(9);
  c.initialize(10);
  EXPECT_EQ(a.checksum(), b.checksum());
  EXPECT_NE(a.checksum(), c.checksum());
  EXPECT_EQ(a.name(0), "fc0.weight");
  EXPECT_EQ(a.name(5), "fc2.bias");
  EXPECT_EQ(a.numels(), (std::vector<size_t>{35, 7, 49, 7, 28, 4}));
  MlpShape bad = tinyShape();
  bad.layers = 0;
  test::expectThrowsWith<InvalidArgument>([&] { Mlp m(bad); }, {"--layers", "got 0"});
}

// The union over ranks of step s's samples is the one-process batch of step s, for every world
// size dividing the batch, across epoch boundaries; the order changes with the epoch.
TEST(TrainMlpData, RanksSplitTheOneProcessBatch) {
  const size_t trainSize = 100;  // 3 steps per epoch of 32, 4 samples never used per epoch
  const size_t batch = 32;
  BatchPlan local(trainSize, batch, 1, 0, 42);
  EXPECT_EQ(local.stepsPerEpoch(), 3u);
  std::set<size_t> epoch0;
  for (uint64_t step = 1; step <= 7; ++step) {
    const auto want = local.indices(step);
    ASSERT_EQ(want.size(), batch);
    if (step <= 3) epoch0.insert(want.begin(), want.end());
    for (int world : {2, 4, 8}) {
      std::multiset<size_t> got;
      for (int r = 0; r < world; ++r) {
        BatchPlan plan(trainSize, batch, world, r, 42);
        const auto mine = plan.indices(step);
        EXPECT_EQ(mine.size(), batch / world);
        got.insert(mine.begin(), mine.end());
      }
      EXPECT_EQ(got, std::multiset<size_t>(want.begin(), want.end()))
          << "step " << step << ", world " << world;
    }
  }
  EXPECT_EQ(epoch0.size(), 96u);                  // no sample twice within an epoch
  EXPECT_NE(local.indices(1), local.indices(4));  // epoch 1 reshuffles
  // Random access: a plan asked for step 5 first (a resumed run) agrees with one that went 1..5.
  BatchPlan resumed(trainSize, batch, 1, 0, 42);
  EXPECT_EQ(resumed.indices(5), local.indices(5));
}

TEST(TrainMlpData, PlanErrors) {
  test::expectThrowsWith<InvalidArgument>([] { BatchPlan p(100, 30, 4, 0, 0); },
                                          {"--global-batch 30", "not divisible", "world size 4"});
  test::expectThrowsWith<InvalidArgument>([] { BatchPlan p(16, 32, 1, 0, 0); },
                                          {"--dataset-size 16", "--global-batch 32"});
}

TEST(TrainMlpData, DatasetIsAFunctionOfTheSeed) {
  DatasetOptions o;
  o.trainSize = 300;
  o.evalSize = 50;
  SyntheticDataset a(o), b(o);
  o.seed = 1;
  SyntheticDataset c(o);
  std::vector<size_t> idx = {0, 17, 299};
  Batch ba, bb, bc;
  a.gather(idx, &ba.x, &ba.y);
  b.gather(idx, &bb.x, &bb.y);
  c.gather(idx, &bc.x, &bc.y);
  EXPECT_EQ(ba.x, bb.x);
  EXPECT_EQ(ba.y, bb.y);
  EXPECT_NE(ba.x, bc.x);
  // Labels come from the teacher: every class in range, and more than one class in use.
  const auto counts = a.classCounts();
  size_t used = 0, total = 0;
  for (size_t n : counts) {
    used += n > 0;
    total += n;
  }
  EXPECT_EQ(total, 300u);
  EXPECT_GE(used, 5u);
}

class TrainMlpCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::uniqueTempPath("train-mlp-ckpt");
    model_.initialize(4);
    state_.options.algorithm = optim::Algorithm::kAdamW;
    optim::FlatOptimizer opt(state_.options, model_.numel());
    std::vector<float> grads(model_.numel(), 0.25f);
    std::vector<float> params(model_.params(), model_.params() + model_.numel());
    opt.step(params.data(), grads.data());
    state_ = optim::OptimizerState::fromFlat(opt, model_.numels());
    meta_.seed = 4;
    meta_.globalBatch = 8;
    meta_.datasetSize = 64;
    meta_.widths = model_.shape().widths();
    meta_.mode = "zero";
    meta_.worldSize = 2;
    meta_.optimizer = state_.options.describe();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(uint64_t step, size_t keep = 2) {
    meta_.step = step;
    CheckpointDir(dir_).write(meta_, model_, state_, keep);
  }

  std::string dir_;
  Mlp model_{tinyShape()};
  optim::OptimizerState state_;
  CheckpointMeta meta_;
};

TEST_F(TrainMlpCheckpoint, RoundTripAndNewest) {
  CheckpointDir dir(dir_);
  EXPECT_EQ(dir.latestStep(), 0u);  // no directory yet
  write(1);
  write(3);
  fs::create_directories(dir_ + "/.step-00000004.tmp");  // a writer that died
  fs::create_directories(dir_ + "/step-notanumber");
  EXPECT_EQ(dir.latestStep(), 3u);
  const Checkpoint ck = dir.read(3);
  EXPECT_EQ(ck.meta.step, 3u);
  EXPECT_EQ(ck.meta.seed, 4u);
  EXPECT_EQ(ck.meta.mode, "zero");
  EXPECT_EQ(ck.meta.widths, model_.shape().widths());
  EXPECT_EQ(ck.numels, model_.numels());
  EXPECT_EQ(ck.names[1], "fc0.bias");
  EXPECT_EQ(ck.params, std::vector<float>(model_.params(), model_.params() + model_.numel()));
  EXPECT_EQ(ck.optimizer.steps, 1u);
  EXPECT_EQ(ck.optimizer.slots, state_.slots);
  // keep = 2: the third write removes step 1 and the dead writer's temporary.
  write(5);
  EXPECT_FALSE(fs::exists(dir_ + "/step-00000001"));
  EXPECT_TRUE(fs::exists(dir_ + "/step-00000003"));
  EXPECT_FALSE(fs::exists(dir_ + "/.step-00000004.tmp"));
  EXPECT_EQ(dir.latestStep(), 5u);
}

// CheckpointDir::open: the same header, and pieces of every parameter and optimizer slot equal to
// what read() gives whole.
TEST_F(TrainMlpCheckpoint, OpenedReadsPiecesOfWhatReadGives) {
  write(3);
  const Checkpoint whole = CheckpointDir(dir_).read(3);
  const Checkpoint opened = CheckpointDir(dir_).open(3, true);
  ASSERT_TRUE(opened.modelFile && opened.optimizerFile);
  EXPECT_TRUE(opened.params.empty());
  EXPECT_EQ(opened.meta.step, 3u);
  EXPECT_EQ(opened.numels, whole.numels);
  EXPECT_EQ(opened.names, whole.names);
  EXPECT_EQ(opened.optimizer.steps, whole.optimizer.steps);
  for (size_t p = 0; p < whole.numels.size(); ++p) {
    const size_t n = whole.numels[p];
    const size_t half = n / 2;
    std::vector<float> got(n, -1.0f);
    opened.modelFile->read(p, half, n - half, got.data() + half);  // the back half first
    opened.modelFile->read(p, 0, half, got.data());
    EXPECT_EQ(0, std::memcmp(got.data(), whole.params.data() + opened.modelFile->offset(p),
                             n * sizeof(float)))
        << "parameter " << p;
    for (size_t k = 0; k < whole.optimizer.slotNames.size(); ++k) {
      opened.optimizerFile->read(p, k, 0, n, got.data());
      EXPECT_EQ(got, whole.optimizer.slots[p][k]) << "parameter " << p << " slot " << k;
    }
  }
  float x = 0;
  test::expectThrowsWith<InvalidArgument>([&] { opened.modelFile->read(1, 0, 1000, &x); },
                                          {"model.bin", "parameter 1", "not in the file"});
}

void flipByte(const std::string& path, long offsetFromEnd) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-offsetFromEnd, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(-offsetFromEnd, std::ios::end);
  f.write(&c, 1);
}

TEST_F(TrainMlpCheckpoint, CorruptFilesAreNamed) {
  write(2);
  const std::string model = dir_ + "/step-00000002/model.bin";
  const std::string optimizer = dir_ + "/step-00000002/optimizer.bin";
  flipByte(model, 20);  // inside the parameters
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).read(2); },
                                          {model, "checksum mismatch"});
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).open(2, true); },
                                          {model, "checksum mismatch"});
  EXPECT_NO_THROW(CheckpointDir(dir_).open(2, false));  // the ranks that leave it to rank 0
  flipByte(model, 20);                                  // restored
  EXPECT_NO_THROW(CheckpointDir(dir_).read(2));
  flipByte(optimizer, 20);
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).read(2); }, {optimizer});
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).open(2, true); },
                                          {optimizer, "bad checksum"});
  flipByte(optimizer, 20);
  fs::resize_file(model, fs::file_size(model) - 3);
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).read(2); },
                                          {model, "truncated"});
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).open(2, false); },
                                          {model, "truncated"});
  {
    std::ofstream f(model, std::ios::binary | std::ios::trunc);
    f << "not a checkpoint, but long enough to have a header";
  }
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).read(2); },
                                          {model, "bad magic"});
  fs::remove(model);
  test::expectThrowsWith<InvalidArgument>([&] { CheckpointDir(dir_).read(2); },
                                          {model, "cannot open"});
}

}  // namespace
}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
