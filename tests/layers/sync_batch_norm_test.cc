// SyncBatchNorm against one process's BatchNorm over the global batch, computed here by an
// independent two-pass reference in double (torch's definitions: biased variance to normalize,
// unbiased for the running variance, dx of the summed loss). Every CPU backend at world sizes 1-4,
// with uneven per-rank batches (one rank holding none from 3 ranks up), two training iterations
// (running statistics compound), evaluation mode, fp32 and bf16 inputs, and the errors.
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/base/float16.h"
#include "c10d/layers/norm/sync_batch_norm.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"
#include "tests/layers/reducer_fixture.h"  // getValue / setValue

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using norm::SyncBatchNorm;
using norm::SyncBatchNormOptions;

constexpr size_t kC = 3;  // channels
constexpr size_t kS = 5;  // positions per channel

// Per-rank batches: uneven, and a rank with none from 3 ranks up.
std::vector<size_t> batchesFor(int ws) {
  const std::vector<size_t> all{3, 0, 5, 2};
  if (ws == 1) return {7};
  if (ws == 2) return {3, 5};
  return std::vector<size_t>(all.begin(), all.begin() + ws);
}

// Global sample b, channel c, position s of iteration `it`: channel offsets far from 0 (a variance
// from sum of squares must survive the cancellation).
double xValue(size_t b, size_t c, size_t s, int it) {
  return 10.0 * static_cast<double>(c) + 3.0 * it +
         std::sin(0.7 * static_cast<double>(b * kS + s) + 1.1 * static_cast<double>(c) + it);
}
double dyValue(size_t b, size_t c, size_t s, int it) {
  return std::cos(0.3 * static_cast<double>(b * 7 + s) - 0.5 * static_cast<double>(c) + it);
}

// The global batch, the first global sample of `rank`'s share, and the share's size.
struct Share {
  size_t global, first, mine;
};
Share shareOf(int size, int rank) {
  const std::vector<size_t> batches = batchesFor(size);
  return {std::accumulate(batches.begin(), batches.end(), size_t{0}),
          std::accumulate(batches.begin(), batches.begin() + rank, size_t{0}),
          batches[static_cast<size_t>(rank)]};
}

struct Reference {
  std::vector<double> y, dx;         // global, B x C x S
  std::vector<double> wgrad, bgrad;  // global sums
  std::vector<double> mean, var;     // biased
};

// One process over the global batch: two passes in double.
Reference reference(const std::vector<double>& x, const std::vector<double>& dy, size_t batch,
                    const std::vector<double>& w, const std::vector<double>& b, double eps) {
  Reference r;
  const double n = static_cast<double>(batch * kS);
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.wgrad.assign(kC, 0.0);
  r.bgrad.assign(kC, 0.0);
  r.mean.assign(kC, 0.0);
  r.var.assign(kC, 0.0);
  auto at = [](size_t bb, size_t c, size_t s) { return (bb * kC + c) * kS + s; };
  for (size_t c = 0; c < kC; ++c) {
    for (size_t bb = 0; bb < batch; ++bb)
      for (size_t s = 0; s < kS; ++s) r.mean[c] += x[at(bb, c, s)];
    r.mean[c] /= n;
    for (size_t bb = 0; bb < batch; ++bb)
      for (size_t s = 0; s < kS; ++s) r.var[c] += std::pow(x[at(bb, c, s)] - r.mean[c], 2);
    r.var[c] /= n;
    const double is = 1.0 / std::sqrt(r.var[c] + eps);
    double sdy = 0, sdyx = 0;
    for (size_t bb = 0; bb < batch; ++bb) {
      for (size_t s = 0; s < kS; ++s) {
        const size_t i = at(bb, c, s);
        const double xhat = (x[i] - r.mean[c]) * is;
        r.y[i] = xhat * w[c] + b[c];
        sdy += dy[i];
        sdyx += dy[i] * xhat;
      }
    }
    r.wgrad[c] = sdyx;
    r.bgrad[c] = sdy;
    // dx of sum(dy * y): w * is * (dy - mean(dy) - xhat * mean(dy * xhat)).
    for (size_t bb = 0; bb < batch; ++bb) {
      for (size_t s = 0; s < kS; ++s) {
        const size_t i = at(bb, c, s);
        const double xhat = (x[i] - r.mean[c]) * is;
        r.dx[i] = w[c] * is * (dy[i] - sdy / n - xhat * sdyx / n);
      }
    }
  }
  return r;
}

double bf16Round(double v) {
  return detail::bf16ToFloatInline(detail::floatToBf16Inline(static_cast<float>(v)));
}

// Host tensor of `n` elements of `dtype` (fp32 / bf16) backed by `mem`.
Tensor hostTensor(std::vector<uint64_t>& mem, size_t n, DataType dtype) {
  mem.assign((n * elementSize(dtype) + 7) / 8 + 1, 0);
  return Tensor(mem.data(), n, dtype);
}
void expectNear(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::max(1.0, std::fabs(want)))
      << what << ": got " << got << ", want " << want;
}

class SyncBatchNormTest : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(SyncBatchNormTest, EqualsOneProcessOverTheGlobalBatch) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("syncbn");
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const Share share = shareOf(size, rank);
    const size_t global = share.global, first = share.first, mine = share.mine;
    for (DataType dt : {DataType::kFloat32, DataType::kBFloat16}) {
      const std::string what = std::string(toString(dt)) + " rank " + std::to_string(rank);
      // bf16: the result is rounded to 8 bits of mantissa; the statistics stay in double.
      const double tol = dt == DataType::kFloat32 ? 2e-5 : 2e-2;
      SyncBatchNormOptions o;
      o.momentum = 0.25;
      SyncBatchNorm bn(pg, kC, o);
      std::vector<double> w(kC), b(kC);
      for (size_t c = 0; c < kC; ++c) {
        w[c] = 0.5 + 0.25 * static_cast<double>(c);
        b[c] = 0.1 * static_cast<double>(c) - 0.2;
        static_cast<float*>(bn.weight().data)[c] = static_cast<float>(w[c]);
        static_cast<float*>(bn.bias().data)[c] = static_cast<float>(b[c]);
      }
      std::vector<double> runMean(kC, 0.0), runVar(kC, 1.0), wgradSum(kC, 0.0), bgradSum(kC, 0.0);
      std::vector<uint64_t> xm, ym, dym, dxm;
      for (int it = 0; it < 2; ++it) {
        std::vector<double> gx(global * kC * kS), gdy(gx.size());
        for (size_t bb = 0; bb < global; ++bb)
          for (size_t c = 0; c < kC; ++c)
            for (size_t s = 0; s < kS; ++s) {
              const size_t i = (bb * kC + c) * kS + s;
              gx[i] = xValue(bb, c, s, it);
              gdy[i] = dyValue(bb, c, s, it);
              if (dt == DataType::kBFloat16) {
                gx[i] = bf16Round(gx[i]);
                gdy[i] = bf16Round(gdy[i]);
              }
            }
        const Reference ref = reference(gx, gdy, global, w, b, o.eps);
        const size_t n = mine * kC * kS, off = first * kC * kS;
        Tensor x = hostTensor(xm, n, dt), y = hostTensor(ym, n, dt);
        Tensor dy = hostTensor(dym, n, dt), dx = hostTensor(dxm, n, dt);
        for (size_t i = 0; i < n; ++i) {
          setValue(x, i, gx[off + i]);
          setValue(dy, i, gdy[off + i]);
        }
        bn.forward(x, mine, y);
        for (size_t i = 0; i < n; ++i) expectNear(getValue(y, i), ref.y[off + i], tol, what + " y");
        bn.backward(dy, dx);
        for (size_t i = 0; i < n; ++i)
          expectNear(getValue(dx, i), ref.dx[off + i], tol, what + " dx");
        const double g = static_cast<double>(global * kS);
        for (size_t c = 0; c < kC; ++c) {
          runMean[c] = (1 - o.momentum) * runMean[c] + o.momentum * ref.mean[c];
          runVar[c] = (1 - o.momentum) * runVar[c] + o.momentum * ref.var[c] * g / (g - 1);
          wgradSum[c] += ref.wgrad[c];
          bgradSum[c] += ref.bgrad[c];
          expectNear(static_cast<float*>(bn.runningMean().data)[c], runMean[c], 1e-5,
                     what + " running mean");
          expectNear(static_cast<float*>(bn.runningVar().data)[c], runVar[c], 1e-5,
                     what + " running var");
        }
      }
      EXPECT_EQ(bn.numBatchesTracked(), 2u);
      // This rank's parameter gradients, summed over the group, are the global batch's.
      std::vector<float> grads(2 * kC);
      for (size_t c = 0; c < kC; ++c) {
        grads[c] = static_cast<float*>(bn.weightGrad().data)[c];
        grads[kC + c] = static_cast<float*>(bn.biasGrad().data)[c];
      }
      pg->allreduce(Tensor(grads.data(), grads.size(), DataType::kFloat32))->wait();
      for (size_t c = 0; c < kC; ++c) {
        expectNear(grads[c], wgradSum[c], 1e-4, what + " weight grad");
        expectNear(grads[kC + c], bgradSum[c], 1e-4, what + " bias grad");
      }
      // Evaluation: the running statistics, no communication (rank 0 alone may evaluate).
      bn.setTraining(false);
      if (rank == 0) {
        std::vector<uint64_t> em, om;
        Tensor ex = hostTensor(em, kC * kS, dt), ey = hostTensor(om, kC * kS, dt);
        for (size_t i = 0; i < kC * kS; ++i) setValue(ex, i, xValue(0, i / kS, i % kS, 5));
        bn.forward(ex, 1, ey);
        for (size_t c = 0; c < kC; ++c)
          for (size_t s = 0; s < kS; ++s) {
            const size_t i = c * kS + s;
            const double want =
                (getValue(ex, i) - static_cast<float*>(bn.runningMean().data)[c]) /
                    std::sqrt(static_cast<float*>(bn.runningVar().data)[c] + o.eps) * w[c] +
                b[c];
            expectNear(getValue(ey, i), want, tol, what + " eval y");
          }
      }
    }
    pg->barrier()->wait();
  });
}

// Each training forward keeps what its backward needs (torch's autograd context): an evaluation
// forward (local with running statistics, collective without) or a second training forward
// between a forward and its backward changes nothing in that backward, bit for bit: dx and the
// weight and bias gradients. Every combination of affine and trackRunningStats.
TEST_P(SyncBatchNormTest, BackwardUsesItsOwnForward) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("syncbn-saved");
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const size_t mine = batchesFor(size)[rank];
    const size_t n = mine * kC * kS;
    auto fill = [&](std::vector<float>& v, int it) {
      v.resize(n);
      for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(
            xValue(static_cast<size_t>(rank) * 5 + i / (kC * kS), (i / kS) % kC, i % kS, it));
      }
    };
    std::vector<float> x1, x2, xe, dy;
    fill(x1, 0);
    fill(x2, 1);
    fill(xe, 2);
    fill(dy, 3);
    for (float& v : dy) v = std::sin(v);
    auto t = [](std::vector<float>& v) { return Tensor(v.data(), v.size(), DataType::kFloat32); };
    for (bool affine : {true, false}) {
      for (bool track : {true, false}) {
        const std::string what = std::string(affine ? "affine" : "no affine") +
                                 (track ? ", tracked" : ", untracked") + ", rank " +
                                 std::to_string(rank);
        SyncBatchNormOptions o;
        o.affine = affine;
        o.trackRunningStats = track;
        struct Result {
          std::vector<float> dx, wgrad, bgrad;
        };
        // kind 0: train -> backward; 1: train -> eval -> train again -> backward(last);
        // 2: train -> train (another input) -> backward(first's saved).
        auto run = [&](int kind) {
          SyncBatchNorm bn(pg, kC, o);
          for (size_t c = 0; affine && c < kC; ++c) {
            static_cast<float*>(bn.weight().data)[c] = 0.75f + 0.5f * static_cast<float>(c);
            static_cast<float*>(bn.bias().data)[c] = 0.25f * static_cast<float>(c);
          }
          std::vector<float> y(n), ye(n);
          auto saved = bn.forward(t(x1), mine, t(y));
          if (kind == 1) {
            bn.setTraining(false);
            bn.forward(t(xe), mine, t(ye));
            bn.setTraining(true);
          }
          if (kind == 2) bn.forward(t(x2), mine, t(ye));
          Result r;
          r.dx.resize(n);
          if (kind == 2) {
            bn.backward(*saved, t(dy), t(r.dx));
          } else {
            bn.backward(t(dy), t(r.dx));
          }
          if (affine) {
            r.wgrad.assign(static_cast<float*>(bn.weightGrad().data),
                           static_cast<float*>(bn.weightGrad().data) + kC);
            r.bgrad.assign(static_cast<float*>(bn.biasGrad().data),
                           static_cast<float*>(bn.biasGrad().data) + kC);
          }
          return r;
        };
        const Result plain = run(0);
        for (int kind : {1, 2}) {
          const Result other = run(kind);
          const char* how = kind == 1 ? "an evaluation forward" : "a second training forward";
          EXPECT_EQ(other.dx, plain.dx) << what << ": dx changed by " << how << " before backward";
          EXPECT_EQ(other.wgrad, plain.wgrad) << what << ": weight grad changed by " << how;
          EXPECT_EQ(other.bgrad, plain.bgrad) << what << ": bias grad changed by " << how;
        }
      }
    }
    pg->barrier()->wait();
  });
}

// Inputs far from 0: the variance is combined from per-rank means and squared deviations, so it
// does not cancel as E[x^2] - mean^2 does (in double, that loses the variance of values near 3e7
// with a standard deviation of 30). Against the two-pass reference over the global batch.
TEST_P(SyncBatchNormTest, VarianceOfInputsFarFromZero) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("syncbn-far");
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const Share share = shareOf(size, rank);
    const size_t global = share.global, first = share.first, mine = share.mine;
    for (double center : {1e4, 3e7}) {
      const double spread = center > 1e5 ? 30.0 : 1.0;
      std::vector<double> gx(global * kC * kS), gdy(gx.size(), 0.0);
      for (size_t i = 0; i < gx.size(); ++i) {
        gx[i] = static_cast<float>(center + spread * std::sin(1.7 * static_cast<double>(i)));
      }
      const Reference ref = reference(gx, gdy, global, {1, 1, 1}, {0, 0, 0}, 1e-5);
      SyncBatchNormOptions o;
      o.momentum = 1.0;  // the running variance is the batch's (unbiased)
      SyncBatchNorm bn(pg, kC, o);
      const size_t n = mine * kC * kS, off = first * kC * kS;
      std::vector<float> x(n), y(n);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(gx[off + i]);
      bn.forward(Tensor(x.data(), n, DataType::kFloat32), mine,
                 Tensor(y.data(), n, DataType::kFloat32));
      const double g = static_cast<double>(global * kS);
      const std::string what =
          "center " + std::to_string(center) + ", rank " + std::to_string(rank);
      for (size_t c = 0; c < kC; ++c) {
        expectNear(static_cast<float*>(bn.runningVar().data)[c], ref.var[c] * g / (g - 1), 1e-5,
                   what + " running var");
      }
      for (size_t i = 0; i < n; ++i) expectNear(y[i], ref.y[off + i], 2e-5, what + " y");
    }
    pg->barrier()->wait();
  });
}

// Errors: every rank with an empty batch (fewer than 2 values over the group) fails on every
// rank, after the allreduce (no rank can know alone); bad shapes and dtypes before any collective.
TEST_P(SyncBatchNormTest, ErrorsNameWhatIsWrong) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("syncbn-err");
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    SyncBatchNorm bn(pg, kC);
    std::vector<float> x(kC * kS * 2), y(x.size());
    const Tensor tx(x.data(), x.size(), DataType::kFloat32),
        ty(y.data(), y.size(), DataType::kFloat32);
    auto expectArg = [&](const std::function<void()>& f, const std::string& needle) {
      try {
        f();
        ADD_FAILURE() << "rank " << rank << ": no error; wanted '" << needle << "'";
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      }
    };
    // Only rank 0 holds one sample of one position per channel: 1 value over the group.
    std::vector<float> one(kC, 1.0f), oneOut(kC);
    const Tensor t1(one.data(), rank == 0 ? kC : 0, DataType::kFloat32);
    const Tensor o1(oneOut.data(), rank == 0 ? kC : 0, DataType::kFloat32);
    expectArg([&] { bn.forward(t1, rank == 0 ? 1 : 0, o1); }, "more than 1 value per channel");
    expectArg([&] { bn.forward(tx, 4, ty); }, "are not 4 samples x 3 channels");
    expectArg([&] { bn.forward(Tensor(x.data(), x.size(), DataType::kFloat64), 2, ty); },
              "float or bfloat16 only");
    expectArg([&] { bn.forward(tx, 2, Tensor(y.data(), 3, DataType::kFloat32)); }, "output is");
    SyncBatchNorm fresh(pg, kC);
    expectArg([&] { fresh.backward(ty, tx); }, "no training forward");
    EXPECT_THROW(SyncBatchNorm(pg, 0), InvalidArgument);
    // The group is still in step: a good forward and backward work on every rank.
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) + 0.5f * rank;
    bn.forward(tx, 2, ty);
    bn.backward(ty, tx);
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, SyncBatchNormTest,
                         ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})), [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
