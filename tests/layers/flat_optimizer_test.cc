// FlatOptimizer against torch.optim: three steps of SGD (momentum + dampening + weight decay,
// Nesterov, plain), Adam with L2 and AdamW on a 6-element vector, compared with values torch
// produced; the options' validation errors; names and slots.
//
// The reference values come from torch 1.13 (Debian python3-torch), with this script:
//
//   import torch
//   p0 = [0.5, -1.25, 2.0, 0.0, -0.75, 3.5]
//   def grad(step, i): return ((i + 1) * 0.3 - step * 0.7) * (1 if i % 2 else -1)
//   cases = [
//     ("sgd_momentum_dampening_wd", torch.optim.SGD,
//      dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
//     ("sgd_nesterov_wd", torch.optim.SGD,
//      dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05)),
//     ("sgd_plain_wd", torch.optim.SGD, dict(lr=0.2, weight_decay=0.1)),
//     ("adam_l2", torch.optim.Adam, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
//     ("adamw", torch.optim.AdamW, dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
//   ]
//   for name, cls, kw in cases:
//     p = torch.nn.Parameter(torch.tensor(p0))
//     opt = cls([p], foreach=False, **kw)
//     for step in range(3):
//       p.grad = torch.tensor([grad(step, i) for i in range(len(p0))])
//       opt.step()
//     st = opt.state[p]
//     f = lambda t: "{" + ", ".join("%.9gf" % v for v in t.tolist()) + "}"
//     print(name, "params", f(p.detach()))
//     for k in ("momentum_buffer", "exp_avg", "exp_avg_sq"):
//       if k in st and st[k] is not None: print(name, k, f(st[k]))
//
// run as `ATEN_CPU_CAPABILITY=default python3 ref.py`: torch's AVX2 kernels fuse a * b + c into one
// FMA and then differ from the two-rounding arithmetic (ours, and torch's scalar kernels) in the
// last one or two bits; the tolerance below (4 ulps) accepts either. The gradients are computed
// in double and rounded to fp32, as torch.tensor() does.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/layers/common/memory.h"
#include "c10d/layers/optim/flat_optimizer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using optim::Algorithm;
using optim::FlatOptimizer;
using optim::OptimizerOptions;

const std::vector<float> kP0{0.5f, -1.25f, 2.0f, 0.0f, -0.75f, 3.5f};

float gradAt(int step, size_t i) {
  return static_cast<float>(((i + 1) * 0.3 - step * 0.7) * (i % 2 ? 1 : -1));
}

// Distance in units in the last place between two finite floats of the same sign convention.
int64_t ulps(float a, float b) {
  int32_t ia;
  int32_t ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = static_cast<int32_t>(0x80000000u - static_cast<uint32_t>(ia));
  if (ib < 0) ib = static_cast<int32_t>(0x80000000u - static_cast<uint32_t>(ib));
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

void expectNear(const float* got, const std::vector<float>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(ulps(got[i], want[i]), 4)
        << what << "[" << i << "]: got " << got[i] << ", torch " << want[i];
  }
}

struct TorchCase {
  std::string name;
  OptimizerOptions options;
  std::vector<float> params;
  std::vector<std::vector<float>> slots;  // in slot order
};

std::vector<TorchCase> torchCases() {
  std::vector<TorchCase> cases;
  OptimizerOptions o;
  o.algorithm = Algorithm::kSgd;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.dampening = 0.1;
  o.weightDecay = 0.01;
  cases.push_back(
      {"sgd_momentum_dampening_wd",
       o,
       {0.411171943f, -1.31665826f, 2.2221446f, -0.392249197f, -0.194290787f, 2.7701993f},
       {{1.08401513f, -0.347888887f, -0.388237298f, 1.19357204f, -1.96744823f, 2.79165769f}}});
  o = OptimizerOptions();
  o.lr = 0.05;
  o.momentum = 0.8;
  o.nesterov = true;
  o.weightDecay = 0.05;
  cases.push_back(
      {"sgd_nesterov_wd",
       o,
       {0.387360662f, -1.23136163f, 2.07536268f, -0.218602091f, -0.410539538f, 3.00387096f},
       {{1.28974938f, -0.652971566f, 0.0161937475f, 0.954134345f, -1.77284873f, 2.83414507f}}});
  o = OptimizerOptions();
  o.lr = 0.2;
  o.weightDecay = 0.1;
  cases.push_back(
      {"sgd_plain_wd",
       o,
       {0.229819983f, -1.11213803f, 1.99445605f, -0.288496017f, -0.240973964f, 2.65282798f},
       {}});
  o = OptimizerOptions();
  o.algorithm = Algorithm::kAdam;
  o.lr = 0.01;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  o.weightDecay = 0.1;
  cases.push_back(
      {"adam_l2",
       o,
       {0.499877542f, -1.25838339f, 2.01581573f, -0.0249720886f, -0.722631216f, 3.47129655f},
       {{0.135407388f, -0.0744935274f, 0.0135569014f, 0.121919557f, -0.223540306f, 0.379362851f},
        {0.00158962316f, 0.00113420328f, 0.000981360907f, 0.00172663899f, 0.00326872617f,
         0.00727030775f}}});
  o = OptimizerOptions();
  o.algorithm = Algorithm::kAdamW;
  o.lr = 0.02;
  o.beta1 = 0.8;
  o.beta2 = 0.99;
  o.eps = 1e-6;
  o.weightDecay = 0.05;
  cases.push_back(
      {"adamw",
       o,
       {0.499068528f, -1.26904678f, 2.0328691f, -0.0481122285f, -0.695070446f, 3.43449259f},
       {{0.245600015f, -0.0992000103f, -0.0472000018f, 0.193600014f, -0.340000033f, 0.486400038f},
        {0.01456609f, 0.0100273602f, 0.0108348094f, 0.0169884395f, 0.0284882486f, 0.0453342386f}}});
  return cases;
}

// Construction allocates exactly its slots (Adam: two of numel floats), never a third copy
// meanwhile. Counted (c10d/layers/common/memory.h).
TEST(FlatOptimizerTest, ConstructionAllocatesItsSlotsOnly) {
  OptimizerOptions o;
  o.algorithm = Algorithm::kAdam;
  const int64_t before = layers::layerMemory().liveBytes;
  layers::resetLayerMemoryPeak();
  {
    FlatOptimizer opt(o, 1000);
    const layers::LayerMemory built = layers::layerMemory();
    EXPECT_EQ(built.liveBytes - before, 2 * 1000 * 4);
    EXPECT_EQ(built.peakBytes - before, 2 * 1000 * 4) << "a temporary slot during construction";
  }
}

TEST(FlatOptimizerTest, MatchesTorchOptim) {
  for (const TorchCase& c : torchCases()) {
    FlatOptimizer opt(c.options, kP0.size());
    ASSERT_EQ(opt.numSlots(), c.slots.size()) << c.name;
    std::vector<float> p = kP0;
    for (int step = 0; step < 3; ++step) {
      std::vector<float> g(kP0.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = gradAt(step, i);
      const std::vector<float> gradsBefore = g;
      opt.step(p.data(), g.data());
      EXPECT_EQ(g, gradsBefore) << c.name << ": step() must not write the gradients";
    }
    EXPECT_EQ(opt.steps(), 3u) << c.name;
    expectNear(p.data(), c.params, c.name + " params");
    for (size_t k = 0; k < c.slots.size(); ++k) {
      expectNear(opt.slot(k), c.slots[k], c.name + " " + opt.slotName(k));
    }
  }
}

// Splitting a range into pieces stepped separately changes nothing: what ZeRO relies on.
TEST(FlatOptimizerTest, ElementwiseSoShardsAgreeBitForBit) {
  for (const TorchCase& c : torchCases()) {
    FlatOptimizer whole(c.options, kP0.size());
    FlatOptimizer head(c.options, 2);
    FlatOptimizer tail(c.options, kP0.size() - 2);
    std::vector<float> a = kP0;
    std::vector<float> b = kP0;
    for (int step = 0; step < 4; ++step) {
      std::vector<float> g(kP0.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = gradAt(step, i);
      whole.step(a.data(), g.data());
      head.step(b.data(), g.data());
      tail.step(b.data() + 2, g.data() + 2);
    }
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << c.name;
    for (size_t k = 0; k < whole.numSlots(); ++k) {
      EXPECT_EQ(0, std::memcmp(whole.slot(k), head.slot(k), 2 * sizeof(float))) << c.name;
      EXPECT_EQ(0, std::memcmp(whole.slot(k) + 2, tail.slot(k), 4 * sizeof(float))) << c.name;
    }
  }
}

// Parameter groups: spans with their own lr and weight decay step exactly as separate optimizers
// built with those options (and the elements in no span as the optimizer's own).
TEST(FlatOptimizerTest, SpansStepAsOptimizersOfTheirOwn) {
  for (const TorchCase& c : torchCases()) {
    OptimizerOptions other = c.options;
    other.lr = c.options.lr * 3;
    other.weightDecay = c.options.weightDecay + 0.25;
    FlatOptimizer whole(c.options, kP0.size());
    FlatOptimizer head(c.options, 1);  // [0, 1): no span
    FlatOptimizer middle(other, 3);    // [1, 4): a span
    FlatOptimizer tail(c.options, 2);  // [4, 6): no span
    const std::vector<optim::Span> spans = {{1, 4, other.lr, other.weightDecay}};
    std::vector<float> a = kP0;
    std::vector<float> b = kP0;
    for (int step = 0; step < 4; ++step) {
      std::vector<float> g(kP0.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = gradAt(step, i);
      whole.step(a.data(), g.data(), spans);
      head.step(b.data(), g.data());
      middle.step(b.data() + 1, g.data() + 1);
      tail.step(b.data() + 4, g.data() + 4);
    }
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << c.name;
    // And the span changed something: the same run without it differs.
    FlatOptimizer plain(c.options, kP0.size());
    std::vector<float> d = kP0;
    for (int step = 0; step < 4; ++step) {
      std::vector<float> g(kP0.size());
      for (size_t i = 0; i < g.size(); ++i) g[i] = gradAt(step, i);
      plain.step(d.data(), g.data());
    }
    EXPECT_NE(0, std::memcmp(a.data() + 1, d.data() + 1, 3 * sizeof(float))) << c.name;
  }
  FlatOptimizer opt(torchCases()[0].options, 4);
  std::vector<float> p(4), g(4);
  EXPECT_THROW(opt.step(p.data(), g.data(), {{2, 5, 0.1, 0.0}}), Error);  // past the end
  EXPECT_THROW(opt.step(p.data(), g.data(), {{2, 3, 0.1, 0.0}, {1, 2, 0.1, 0.0}}), Error);
}

TEST(FlatOptimizerTest, SlotsNamesAndBytes) {
  OptimizerOptions o;
  EXPECT_TRUE(o.slotNames().empty());
  EXPECT_EQ(FlatOptimizer(o, 10).stateBytes(), 0u);
  o.momentum = 0.5;
  EXPECT_EQ(o.slotNames(), std::vector<std::string>{"momentum_buffer"});
  EXPECT_EQ(FlatOptimizer(o, 10).stateBytes(), 40u);
  o.algorithm = Algorithm::kAdamW;
  EXPECT_EQ(o.slotNames(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  FlatOptimizer adam(o, 10);
  EXPECT_EQ(adam.stateBytes(), 80u);
  for (size_t k = 0; k < adam.numSlots(); ++k) {
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(adam.slot(k)[i], 0.0f) << "slots start at zero";
  }
  EXPECT_EQ(optim::parseAlgorithm("adamw"), Algorithm::kAdamW);
  EXPECT_EQ(optim::parseAlgorithm("sgd"), Algorithm::kSgd);
  EXPECT_STREQ(optim::algorithmName(Algorithm::kAdam), "adam");
  EXPECT_NE(o.describe().find("adamw(lr=0.01"), std::string::npos) << o.describe();
  try {
    optim::parseAlgorithm("rmsprop");
    ADD_FAILURE() << "parseAlgorithm accepted rmsprop";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'rmsprop'"), std::string::npos) << e.what();
  }
}

TEST(FlatOptimizerTest, ValidateNamesTheField) {
  struct Bad {
    std::string field;
    OptimizerOptions options;
  };
  std::vector<Bad> bad;
  auto add = [&](const std::string& field, auto edit) {
    OptimizerOptions o;
    edit(o);
    bad.push_back({field, o});
  };
  add("lr", [](OptimizerOptions& o) { o.lr = -0.1; });
  add("lr", [](OptimizerOptions& o) { o.lr = std::nan(""); });
  add("weightDecay", [](OptimizerOptions& o) { o.weightDecay = -1; });
  add("momentum", [](OptimizerOptions& o) { o.momentum = -0.5; });
  add("dampening", [](OptimizerOptions& o) { o.dampening = INFINITY; });
  add("nesterov", [](OptimizerOptions& o) { o.nesterov = true; });  // momentum 0
  add("nesterov", [](OptimizerOptions& o) {
    o.nesterov = true;
    o.momentum = 0.9;
    o.dampening = 0.1;
  });
  add("beta1", [](OptimizerOptions& o) {
    o.algorithm = Algorithm::kAdam;
    o.beta1 = 1.0;
  });
  add("beta2", [](OptimizerOptions& o) {
    o.algorithm = Algorithm::kAdamW;
    o.beta2 = -0.1;
  });
  add("eps", [](OptimizerOptions& o) {
    o.algorithm = Algorithm::kAdam;
    o.eps = -1e-8;
  });
  for (const Bad& b : bad) {
    try {
      b.options.validate();
      ADD_FAILURE() << b.field << ": accepted " << b.options.describe();
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(b.field), std::string::npos)
          << "message lacks '" << b.field << "': " << e.what();
    }
    EXPECT_THROW(FlatOptimizer(b.options, 3), InvalidArgument) << b.field;
  }
  // Fields another algorithm reads are not checked: Adam ignores a negative momentum.
  OptimizerOptions adam;
  adam.algorithm = Algorithm::kAdam;
  adam.momentum = -1;
  EXPECT_NO_THROW(adam.validate());
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
