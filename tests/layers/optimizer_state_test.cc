// OptimizerState: FlatOptimizer -> state -> FlatOptimizer round trip (the state is per parameter,
// so it re-splits at other boundaries), the compatibility checks, the file round trip (bit exact,
// atomic: no temporary left behind) and every load error naming the path.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using optim::Algorithm;
using optim::FlatOptimizer;
using optim::OptimizerOptions;
using optim::OptimizerState;
using optim::OptimizerStateFile;
using optim::sameOptions;

OptimizerOptions adamw() {
  OptimizerOptions o;
  o.algorithm = Algorithm::kAdamW;
  o.lr = 0.003;
  o.weightDecay = 0.01;
  return o;
}

// An optimizer over `numel` elements after `steps` steps with varied gradients.
FlatOptimizer trained(const OptimizerOptions& o, size_t numel, int steps) {
  FlatOptimizer opt(o, numel);
  std::vector<float> p(numel);
  std::vector<float> g(numel);
  for (size_t i = 0; i < numel; ++i) p[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < numel; ++i) g[i] = static_cast<float>((i * 3 + s * 5) % 11) - 5.0f;
    opt.step(p.data(), g.data());
  }
  return opt;
}

void expectSameSlots(const FlatOptimizer& a, const FlatOptimizer& b, const std::string& what) {
  ASSERT_EQ(a.numSlots(), b.numSlots()) << what;
  ASSERT_EQ(a.numel(), b.numel()) << what;
  EXPECT_EQ(a.steps(), b.steps()) << what;
  for (size_t k = 0; k < a.numSlots(); ++k) {
    EXPECT_EQ(0, std::memcmp(a.slot(k), b.slot(k), a.numel() * sizeof(float)))
        << what << ": slot " << a.slotName(k);
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

template <typename F>
void expectLoadError(const std::string& path, F&& corrupt, const std::string& what,
                     const std::string& contents) {
  // load() and the piecewise reader (OptimizerStateFile) refuse it alike.
  for (bool whole : {true, false}) {
    writeFile(path, contents);
    corrupt();
    try {
      if (whole) {
        OptimizerState::load(path);
      } else {
        OptimizerStateFile file(path, true);
      }
      ADD_FAILURE() << what << ": " << (whole ? "load" : "OptimizerStateFile")
                    << " accepted the file";
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + path + "'"), std::string::npos) << what << ": " << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << what << ": " << msg;
    }
  }
}

// OptimizerStateFile: the header as load() gives it, every range of every slot as load()'s, and
// out-of-range reads refused.
TEST(OptimizerStateTest, FileReadInPiecesEqualsLoad) {
  const std::string path = uniqueTempPath("optstate-pieces") + ".bin";
  OptimizerState::fromFlat(trained(adamw(), 16, 2), {10, 6}).save(path);
  const OptimizerState whole = OptimizerState::load(path);
  const OptimizerStateFile file(path, false);
  EXPECT_EQ(file.header().steps, whole.steps);
  EXPECT_EQ(file.header().slotNames, whole.slotNames);
  EXPECT_TRUE(sameOptions(file.header().options, whole.options, nullptr));
  EXPECT_EQ(file.numels(), (std::vector<size_t>{10, 6}));
  for (size_t p = 0; p < 2; ++p) {
    for (size_t k = 0; k < whole.slotNames.size(); ++k) {
      const std::vector<float>& want = whole.slots[p][k];
      std::vector<float> got(want.size() - 2, -1.0f);
      file.read(p, k, 1, got.size(), got.data());  // all but the first and last
      EXPECT_EQ(0, std::memcmp(got.data(), want.data() + 1, got.size() * sizeof(float)))
          << "parameter " << p << " slot " << k;
    }
  }
  file.checkCompatible(adamw(), {10, 6}, "test");
  expectThrowsWith<InvalidArgument>(
      [&] {
        file.checkCompatible(adamw(), {10, 7}, "who");
      },
      {"who", "parameter 1", "has 7 elements"});
  float x = 0;
  expectThrowsWith<InvalidArgument>([&] { file.read(1, 0, 6, 1, &x); },
                                    {path, "parameter 1", "not in the file"});
  std::remove(path.c_str());
}

TEST(OptimizerStateTest, FromFlatAndApplyToRoundTrip) {
  const std::vector<size_t> numels{5, 0, 12, 3};
  for (OptimizerOptions o : {adamw(), OptimizerOptions()}) {
    if (o.algorithm == Algorithm::kSgd) o.momentum = 0.9;
    const FlatOptimizer src = trained(o, 20, 3);
    const OptimizerState st = OptimizerState::fromFlat(src, numels);
    EXPECT_EQ(st.steps, 3u);
    EXPECT_EQ(st.slotNames, o.slotNames());
    ASSERT_EQ(st.slots.size(), numels.size());
    size_t offset = 0;
    for (size_t p = 0; p < numels.size(); ++p) {
      ASSERT_EQ(st.slots[p].size(), src.numSlots());
      for (size_t k = 0; k < src.numSlots(); ++k) {
        ASSERT_EQ(st.slots[p][k].size(), numels[p]);
        EXPECT_TRUE(numels[p] == 0 || std::memcmp(st.slots[p][k].data(), src.slot(k) + offset,
                                                  numels[p] * sizeof(float)) == 0);
      }
      offset += numels[p];
    }
    EXPECT_EQ(st.numel(), 20u);
    EXPECT_EQ(st.stateBytes(), src.stateBytes());
    FlatOptimizer dst(o, 20);
    st.applyTo(dst, numels);
    expectSameSlots(src, dst, o.describe());
    // Continuing both gives the same result.
    FlatOptimizer a = src;
    std::vector<float> pa(20, 1.0f);
    std::vector<float> pb(20, 1.0f);
    std::vector<float> g(20, 0.5f);
    a.step(pa.data(), g.data());
    dst.step(pb.data(), g.data());
    EXPECT_EQ(pa, pb);
  }
}

TEST(OptimizerStateTest, ChecksNameWhatDiffers) {
  const std::vector<size_t> numels{4, 6};
  const OptimizerState st = OptimizerState::fromFlat(trained(adamw(), 10, 2), numels);
  auto expectError = [&](auto f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "accepted (expected '" << part << "')";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  OptimizerOptions lr = adamw();
  lr.lr = 0.004;
  FlatOptimizer other(lr, 10);
  expectError([&] { st.applyTo(other, numels); }, "(lr differs)");
  FlatOptimizer sgd(OptimizerOptions(), 10);
  expectError([&] { st.applyTo(sgd, numels); }, "(algorithm differs)");
  FlatOptimizer right(adamw(), 10);
  expectError([&] { st.applyTo(right, {4, 5, 1}); }, "the state has 2 parameters");
  expectError([&] { st.applyTo(right, {3, 7}); }, "parameter 0 has 3 elements");
  expectError(
      [&] {
        st.checkCompatible(adamw(), {4, 7}, "who", {"a", "fc.bias"});
      },
      "who: parameter 1 ('fc.bias') has 7 elements, its 'exp_avg' in the state has 6");
  FlatOptimizer small(adamw(), 9);
  expectError([&] { OptimizerState::fromFlat(small, numels); }, "add up to 10 elements");
  OptimizerState empty = st;
  empty.slots.clear();
  expectError([&] { empty.applyTo(right, numels); }, "holds no parameters");
  // Options the algorithm does not read may differ.
  OptimizerOptions momentum = adamw();
  momentum.momentum = 0.7;
  FlatOptimizer ok(momentum, 10);
  EXPECT_NO_THROW(st.applyTo(ok, numels));
}

TEST(OptimizerStateTest, SaveLoadRoundTripIsExactAndAtomic) {
  const std::string path = uniqueTempPath("optstate") + ".bin";
  OptimizerOptions o = adamw();
  o.eps = 1e-7;
  const OptimizerState st = OptimizerState::fromFlat(trained(o, 33, 5), {1, 30, 0, 2});
  st.save(path);
  struct stat sb;
  EXPECT_NE(::stat((path + ".tmp").c_str(), &sb), 0) << "the temporary file was left behind";
  const OptimizerState back = OptimizerState::load(path);
  EXPECT_EQ(back.steps, st.steps);
  EXPECT_EQ(back.slotNames, st.slotNames);
  std::string field;
  EXPECT_TRUE(optim::sameOptions(back.options, st.options, &field)) << field;
  EXPECT_EQ(back.options.eps, 1e-7);
  EXPECT_EQ(back.slots, st.slots);  // float ==: bit exact for these finite values
  // Saving over an existing file replaces it.
  OptimizerState sgd = OptimizerState::fromFlat(trained(OptimizerOptions(), 4, 1), {4});
  sgd.save(path);
  const OptimizerState back2 = OptimizerState::load(path);
  EXPECT_EQ(back2.options.algorithm, Algorithm::kSgd);
  EXPECT_TRUE(back2.slotNames.empty());
  ASSERT_EQ(back2.slots.size(), 1u);
  EXPECT_TRUE(back2.slots[0].empty());
  EXPECT_EQ(back2.steps, 1u);
  std::remove(path.c_str());
}

TEST(OptimizerStateTest, LoadErrorsNameThePath) {
  const std::string path = uniqueTempPath("optstate-bad") + ".bin";
  OptimizerState::fromFlat(trained(adamw(), 16, 2), {10, 6}).save(path);
  const std::string good = readFile(path);
  ASSERT_GT(good.size(), 100u);
  auto nothing = [] {};

  expectLoadError(path, nothing, "truncated: 60 of", good.substr(0, 60));
  expectLoadError(path, nothing, "truncated: 5 bytes", good.substr(0, 5));
  expectLoadError(path, nothing, "shorter than the header", good.substr(0, 12));
  std::string magic = good;
  magic[0] = 'X';
  expectLoadError(path, nothing, "bad magic", magic);
  std::string version = good;
  version[8] = 9;
  expectLoadError(path, nothing, "unsupported version 9", version);
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;  // a bit in the data
  expectLoadError(path, nothing, "bad checksum", flipped);
  std::string sum = good;
  sum[good.size() - 1] ^= 0x01;  // a bit in the checksum itself
  expectLoadError(path, nothing, "bad checksum", sum);
  expectLoadError(path, nothing, "trailing bytes", good + "xyz");
  expectLoadError(
      path, [&] { std::remove(path.c_str()); }, "cannot open", good);
  std::remove(path.c_str());
}

// Files saved in format version 1 (tests/layers/data/), checked field by field and bit by bit.
// The format has not changed since it was introduced; these files pin version 1, so that a
// future format change must keep loading them (or say so, and move them to a test of refusal).
// Made by OptimizerState::save of the states below, and checked against the format written in
// optimizer_state.h by a separate reader.
TEST(OptimizerStateTest, LoadsVersion1Files) {
  auto bitsOf = [](const std::vector<float>& v) {
    std::vector<uint32_t> bits(v.size());
    if (!v.empty()) std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
    return bits;
  };
  auto expectBits = [&](const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) { EXPECT_EQ(bitsOf(got), bitsOf(want)) << what; };
  const std::string dir = C10D_LAYERS_TEST_DATA;

  const OptimizerState adamw = OptimizerState::load(dir + "/optimizer_state_v1_adamw.bin");
  EXPECT_EQ(adamw.options.algorithm, Algorithm::kAdamW);
  EXPECT_EQ(adamw.options.lr, 0.001);
  EXPECT_EQ(adamw.options.weightDecay, 0.01);
  EXPECT_EQ(adamw.options.beta1, 0.9);
  EXPECT_EQ(adamw.options.beta2, 0.999);
  EXPECT_EQ(adamw.options.eps, 1e-8);
  EXPECT_EQ(adamw.options.momentum, 0.0);
  EXPECT_EQ(adamw.options.dampening, 0.0);
  EXPECT_FALSE(adamw.options.nesterov);
  EXPECT_EQ(adamw.steps, 12345678901u);  // past 2^32: all 64 bits are read
  EXPECT_EQ(adamw.slotNames, (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  ASSERT_EQ(adamw.slots.size(), 2u);
  ASSERT_EQ(adamw.slots[0].size(), 2u);
  ASSERT_EQ(adamw.slots[1].size(), 2u);
  expectBits(adamw.slots[0][0], {0.5f, -1.25f, 3.0f}, "parameter 0, exp_avg");
  expectBits(adamw.slots[0][1], {0.0625f, 2.0f, 1024.0f}, "parameter 0, exp_avg_sq");
  expectBits(adamw.slots[1][0], {-0.0f}, "parameter 1, exp_avg (negative zero)");
  expectBits(adamw.slots[1][1], {1e-45f}, "parameter 1, exp_avg_sq (a subnormal)");

  const OptimizerState sgd = OptimizerState::load(dir + "/optimizer_state_v1_sgd.bin");
  EXPECT_EQ(sgd.options.algorithm, Algorithm::kSgd);
  EXPECT_EQ(sgd.options.lr, 0.1);
  EXPECT_EQ(sgd.options.momentum, 0.9);
  EXPECT_EQ(sgd.options.dampening, 0.0);
  EXPECT_TRUE(sgd.options.nesterov);
  EXPECT_EQ(sgd.options.weightDecay, 0.0);
  EXPECT_EQ(sgd.steps, 3u);
  EXPECT_EQ(sgd.slotNames, std::vector<std::string>{"momentum_buffer"});
  ASSERT_EQ(sgd.slots.size(), 2u);
  ASSERT_EQ(sgd.slots[0].size(), 1u);
  ASSERT_EQ(sgd.slots[1].size(), 1u);
  expectBits(sgd.slots[0][0], {1.5f, -2.0f}, "parameter 0, momentum_buffer");
  EXPECT_TRUE(sgd.slots[1][0].empty()) << "parameter 1 has no elements";

  // Saving what was loaded gives the same bytes: the writer still writes version 1.
  for (const auto& [name, st] : {std::make_pair("adamw", adamw), std::make_pair("sgd", sgd)}) {
    const std::string copy = uniqueTempPath("optstate-v1") + ".bin";
    st.save(copy);
    EXPECT_EQ(readFile(copy), readFile(dir + "/optimizer_state_v1_" + name + ".bin")) << name;
    std::remove(copy.c_str());
  }
}

TEST(OptimizerStateTest, SaveErrorsNameThePath) {
  const OptimizerState st = OptimizerState::fromFlat(trained(adamw(), 4, 1), {4});
  const std::string dir = "/nonexistent-c10d-dir/state.bin";
  try {
    st.save(dir);
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + ".tmp"), std::string::npos) << e.what();
  }
  OptimizerState bad = st;
  bad.slots[0][1].pop_back();
  EXPECT_THROW(bad.save(uniqueTempPath("optstate-never")), InvalidArgument);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
