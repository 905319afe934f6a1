// zero::clipCoefficient and clipGradNorm against torch.nn.utils.clip_grad_norm_'s bits.
#include "c10d/layers/zero/grad_norm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

// (one fp32 gradient g, max_norm, torch's clip_coef, torch's g after clip_grad_norm_([g], max)),
// from torch 1.13; picked where clip_coef differs both from the quotient in double rounded once
// and from one fp32 division (so a test of either would fail here).
struct TorchCase {
  double g, maxNorm, coef, after;
};
const TorchCase kTorch[] = {
    {0x1.2f359cp+4, 0x1.fd1db9f6a9c4ep+3, 0x1.add8ep-1, 0x1.fd1db4p+3},
    {0x1.eca5ep+1, 0x1.28a49926df691p-3, 0x1.344baap-5, 0x1.28a496p-3},
    {0x1.265e32p+4, 0x1.ae611560f75bap+3, 0x1.764894p-1, 0x1.ae6112p+3},
    {0x1.a4271p+1, 0x1.927203df17177p+1, 0x1.ea6bfap-1, 0x1.9271fep+1},
    {0x1.798d4ap+3, 0x1.325e7a5713c45p+3, 0x1.9f77f4p-1, 0x1.325e7ap+3},
    {0x1.e1a322p-1, 0x1.6b12e369a8b0cp-2, 0x1.81f638p-2, 0x1.6b12cap-2},
    {0x1.c75a9p+3, 0x1.a3f31a697fb49p+3, 0x1.d83106p-1, 0x1.a3f316p+3},
    {0x1.0a6b98p+4, 0x1.1a8f6d4e6050cp+3, 0x1.0f8238p-1, 0x1.1a8f6ap+3},
};

TEST(GradNorm, ClipCoefficientIsTorchsBits) {
  for (const TorchCase& c : kTorch) {
    const float once = static_cast<float>(c.maxNorm / (c.g + 1e-6));
    ASSERT_NE(static_cast<double>(once), c.coef) << "the case must tell the roundings apart";
    EXPECT_EQ(static_cast<double>(zero::clipCoefficient(c.g, c.maxNorm)), c.coef)
        << "norm " << c.g << ", max_norm " << c.maxNorm;
  }
  EXPECT_EQ(zero::clipCoefficient(1.0, 5.0), 1.0f) << "clamped to 1";
  EXPECT_TRUE(std::isnan(zero::clipCoefficient(NAN, 1.0))) << "torch.clamp keeps NaN";
}

// The whole clipGradNorm on a one-rank group: the norm of one element is that element, so the
// clipped value is torch's.
TEST(GradNorm, ClipGradNormScalesAsTorch) {
  const std::string path = "/tmp/c10d-grad-norm-" + std::to_string(getpid());
  InitOptions io;
  io.initMethod = "file://" + path + "?rank=0&world_size=1";
  auto pg = init(io);
  for (const TorchCase& c : kTorch) {
    float g = static_cast<float>(c.g);
    const double norm = zero::clipGradNorm(*pg, &g, 1, {c.maxNorm, 2.0}, kUnsetTimeout);
    EXPECT_EQ(norm, c.g);
    EXPECT_EQ(static_cast<double>(g), c.after) << "g " << c.g << ", max_norm " << c.maxNorm;
  }
  pg.reset();
  ::unlink(path.c_str());
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
