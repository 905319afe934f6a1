// alltoall / alltoallSingle with sizes that do not agree, on every backend:
// - this rank's own block (outputSplits[rank] vs inputSplits[rank], outputs[rank] vs inputs[rank])
//   is checked on the calling rank: InvalidArgument naming the rank and both sizes, before any
//   communication;
// - sizes that disagree across ranks (rank 0 sends 5 elements to rank 1, rank 1 expects another
//   count from rank 0) end in an error on both ranks of the pair, naming the peer and both sizes,
//   within the op timeout: never a hang, never a read or write past a buffer. A rank outside the
//   pair either completes with the right data (verbs) or raises InvalidArgument too (gloo, whose
//   alltoallv is all or nothing). Either way the group stays usable.
#include <chrono>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

class AlltoallSplits : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

// A correct alltoallSingle (rank a sends a + b + 1 elements to rank b, valued 1000a + 10b + i):
// checks that the group is usable and in step after a failed op.
void expectCorrectAlltoall(ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.size();
  std::vector<size_t> in(n), out(n);
  std::vector<float> x, y;
  for (int b = 0; b < n; ++b) {
    in[b] = static_cast<size_t>(r + b + 1);
    out[b] = static_cast<size_t>(b + r + 1);
    for (size_t i = 0; i < in[b]; ++i) x.push_back(static_cast<float>(1000 * r + 10 * b + i));
  }
  y.assign(x.size(), -1.0f);
  pg.alltoallSingle(tensorOf(y.data(), y.size()), tensorOf(x.data(), x.size()), out, in)
      ->wait(Milliseconds(20000));
  size_t off = 0;
  for (int a = 0; a < n; ++a) {
    for (size_t i = 0; i < out[a]; ++i) {
      ASSERT_EQ(y[off + i], static_cast<float>(1000 * a + 10 * r + i))
          << "rank " << r << ": element " << i << " from rank " << a;
    }
    off += out[a];
  }
}

TEST_P(AlltoallSplits, OwnBlockMismatchIsInvalidArgumentBeforeCommunicating) {
  const BackendParam bp = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("a2a-own");
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size, Milliseconds(20000));
    // Sums agree (3 per rank in, 3 per rank out) but this rank would copy 4 elements of its own
    // 3-element input block into its output.
    std::vector<size_t> in(size, 3), out(size, 3);
    out[rank] = 4;
    out[(rank + 1) % size] = 2;
    std::vector<float> x(3 * size, 1.0f), y(3 * size, 0.0f);
    const uint64_t seq = pg->sequenceNumber();
    try {
      pg->alltoallSingle(tensorOf(y.data(), y.size()), tensorOf(x.data(), x.size()), out, in)
          ->wait(Milliseconds(5000));
      ADD_FAILURE() << "alltoallSingle accepted outputSplits[" << rank << "] = 4 with inputSplits["
                    << rank << "] = 3";
    } catch (const InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), "rank " + std::to_string(rank))) << e.what();
      EXPECT_TRUE(contains(e.what(), "4")) << e.what();
      EXPECT_TRUE(contains(e.what(), "3")) << e.what();
    }
    // The list form: outputs[rank] holds 5 elements, inputs[rank] 2.
    std::vector<std::vector<float>> ins(size, std::vector<float>(2, 1.0f));
    std::vector<std::vector<float>> outs(size, std::vector<float>(2, 0.0f));
    outs[rank].assign(5, 0.0f);
    std::vector<Tensor> ti, to;
    for (int q = 0; q < size; ++q) {
      ti.push_back(tensorOf(ins[q].data(), ins[q].size()));
      to.push_back(tensorOf(outs[q].data(), outs[q].size()));
    }
    try {
      pg->alltoall(to, ti)->wait(Milliseconds(5000));
      ADD_FAILURE() << "alltoall accepted outputs[" << rank << "] of 5 elements with inputs["
                    << rank << "] of 2";
    } catch (const InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), "rank " + std::to_string(rank))) << e.what();
      EXPECT_TRUE(contains(e.what(), "5")) << e.what();
      EXPECT_TRUE(contains(e.what(), "2")) << e.what();
    }
    EXPECT_EQ(pg->sequenceNumber(), seq) << "a rejected op consumed a sequence number";
    expectCorrectAlltoall(*pg);
  });
}

// Rank 0 sends `sent` f32 elements to rank 1, which expects `expected` from rank 0; every other
// pair agrees (rank a sends rank b 2 elements). Runs the single-tensor and the list form.
void crossRankMismatch(const BackendParam& bp, int ws, size_t sent, size_t expected,
                       bool listForm) {
  const std::string path = uniqueTempPath("a2a-cross");
  const std::string sentBytes = std::to_string(sent * 4) + " bytes";
  const std::string expectedBytes = std::to_string(expected * 4) + " bytes";
  expectAllRanksOk(ws, [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size, Milliseconds(20000));
    std::vector<size_t> in(size, 2), out(size, 2);
    if (rank == 0) in[1] = sent;
    if (rank == 1) out[0] = expected;
    // Inputs are 1000 * rank + 10 * dest + i; outputs start at -1. Guard elements around every
    // buffer catch a write past it.
    constexpr float kGuard = -7.0f;
    std::vector<std::vector<float>> ins(size), outs(size);
    for (int q = 0; q < size; ++q) {
      ins[q].assign(in[q] + 2, kGuard);
      outs[q].assign(out[q] + 2, kGuard);
      for (size_t i = 0; i < in[q]; ++i)
        ins[q][1 + i] = static_cast<float>(1000 * rank + 10 * q + i);
      for (size_t i = 0; i < out[q]; ++i) outs[q][1 + i] = -1.0f;
    }
    std::vector<float> flatIn(1, kGuard), flatOut(1, kGuard);
    for (int q = 0; q < size; ++q) {
      flatIn.insert(flatIn.end(), ins[q].begin() + 1, ins[q].end() - 1);
      flatOut.insert(flatOut.end(), outs[q].begin() + 1, outs[q].end() - 1);
    }
    flatIn.push_back(kGuard);
    flatOut.push_back(kGuard);

    const auto start = Clock::now();
    std::string error;
    bool invalidArgument = false;
    try {
      std::shared_ptr<Work> w;
      if (listForm) {
        std::vector<Tensor> ti, to;
        for (int q = 0; q < size; ++q) {
          ti.push_back(tensorOf(ins[q].data() + 1, in[q]));
          to.push_back(tensorOf(outs[q].data() + 1, out[q]));
        }
        w = pg->alltoall(to, ti);
      } else {
        w = pg->alltoallSingle(tensorOf(flatOut.data() + 1, flatOut.size() - 2),
                               tensorOf(flatIn.data() + 1, flatIn.size() - 2), out, in);
      }
      w->wait(Milliseconds(20000));
    } catch (const InvalidArgument& e) {
      error = e.what();
      invalidArgument = true;
    } catch (const CommError& e) {
      error = e.what();
    } catch (const Error& e) {
      ADD_FAILURE() << "rank " << rank << ": expected InvalidArgument or CommError, got "
                    << e.what();
      return;
    }
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!error.empty()) std::fprintf(stderr, "[rank %d] %s\n", rank, error.c_str());
    EXPECT_LT(s, 10.0) << "rank " << rank << " took " << s << " s to see the mismatch";

    // Nothing was written past any buffer, nor read past one into an output.
    EXPECT_EQ(flatOut.front(), kGuard);
    EXPECT_EQ(flatOut.back(), kGuard);
    for (int q = 0; q < size; ++q) {
      EXPECT_EQ(outs[q].front(), kGuard) << "rank " << rank << ": before outputs[" << q << "]";
      EXPECT_EQ(outs[q].back(), kGuard) << "rank " << rank << ": past outputs[" << q << "]";
    }

    if (rank == 0 || rank == 1) {
      const int peer = 1 - rank;
      EXPECT_FALSE(error.empty()) << "rank " << rank << ": the mismatch with rank " << peer
                                  << " went unnoticed";
      EXPECT_TRUE(contains(error, "rank " + std::to_string(peer))) << error;
      EXPECT_TRUE(contains(error, sentBytes)) << error;
      EXPECT_TRUE(contains(error, expectedBytes)) << error;
    } else if (!error.empty()) {
      // gloo: every rank learns of the mismatch (its alltoallv runs on all ranks or none).
      EXPECT_TRUE(invalidArgument) << error;
      EXPECT_TRUE(contains(error, "rank 0")) << error;
      EXPECT_TRUE(contains(error, "rank 1")) << error;
    } else {
      // Outside the pair: the op completed, with every block right.
      const int r = rank;
      size_t off = 1;
      for (int a = 0; a < size; ++a) {
        for (size_t i = 0; i < out[a]; ++i) {
          const float got = listForm ? outs[a][1 + i] : flatOut[off + i];
          EXPECT_EQ(got, static_cast<float>(1000 * a + 10 * r + i))
              << "rank " << r << ": element " << i << " from rank " << a;
        }
        off += out[a];
      }
    }
    // No rank is left behind or out of step: the next op works on every rank.
    expectCorrectAlltoall(*pg);
    EXPECT_EQ(pg->brokenError(), nullptr);
  });
}

TEST_P(AlltoallSplits, PeerSendsFewerThanExpected) {
  crossRankMismatch(std::get<0>(GetParam()), std::get<1>(GetParam()), 5, 10, false);
}

TEST_P(AlltoallSplits, PeerSendsMoreThanExpected) {
  crossRankMismatch(std::get<0>(GetParam()), std::get<1>(GetParam()), 10, 5, false);
}

TEST_P(AlltoallSplits, ListFormPeerSendsMoreThanExpected) {
  crossRankMismatch(std::get<0>(GetParam()), std::get<1>(GetParam()), 7, 3, true);
}

INSTANTIATE_TEST_SUITE_P(Backends, AlltoallSplits, ::testing::ValuesIn(conformanceCases({2, 3, 4})),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AlltoallSplits);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
