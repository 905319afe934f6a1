// Conformance: a backend's supports(op, dtype, device) agrees with the reduce-op table
// (c10d/core/reduce_op.h isDefined(): bitwise ops on integer and bool tensors only, every other op
// on every dtype; docs/backends.md's table), every supported (op, dtype) pair runs correctly
// through every reducing collective, and every unsupported one raises InvalidArgument naming the
// op, rank, group, reduce op and dtype before anything is sent (the sequence number does not move
// and the group stays usable). The sweep only runs what supports() reports, so a backend that
// claimed too little, or too much, passed it.
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/expect_error.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

// The table, written out independently of isDefined().
bool inTable(ReduceOp::Kind k, DataType dt) {
  const bool bitwise = k == ReduceOp::BAND || k == ReduceOp::BOR || k == ReduceOp::BXOR;
  if (!bitwise) return true;
  switch (dt) {
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
      return true;
    default:
      return false;
  }
}

class Supports : public ::testing::TestWithParam<BackendParam> {};

TEST_P(Supports, AgreesWithTheReduceOpTableAndEveryPairRunsOrIsRefused) {
  const BackendParam p = GetParam();
  const std::string path = uniqueTempPath("supports");
  expectAllRanksOk(3, [&](int rank, int n) {
    auto pg = makeGroup(p, path, rank, n);
    const std::string prefixEnd =
        ": rank " + std::to_string(rank) + " of group " + pg->name() + " (size 3): ";
    for (DataType dt : allDataTypes()) {
      for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
        const auto kind = static_cast<ReduceOp::Kind>(k);
        const std::string pair = std::string(toString(kind)) + " on " + toString(dt);
        EXPECT_EQ(isDefined(kind, dt), inTable(kind, dt)) << pair;
        // CPU backends (docs/backends.md): exactly the table, nothing less, nothing more. Any
        // backend: nothing outside it.
        if (p.device.isCPU()) {
          EXPECT_EQ(pg->supports(kind, dt, p.device), inTable(kind, dt))
              << p.label() << " " << pair;
          EXPECT_FALSE(pg->supports(kind, dt, Device::cuda(0))) << p.label() << " " << pair;
        } else if (!inTable(kind, dt)) {
          EXPECT_FALSE(pg->supports(kind, dt, p.device)) << p.label() << " " << pair;
        }
        const ReduceOp op =
            kind == ReduceOp::PREMUL_SUM ? ReduceOp::premulSum(premulScale(dt)) : ReduceOp(kind);
        const size_t count = 5;
        if (pg->supports(kind, dt, p.device)) {
          const double ulps = ulpsTolerance(dt, op);
          Buffer a(p, count, dt);
          fillInput(a, op, rank);
          pg->allreduce(a.tensor(), AllreduceOptions{op, kUnsetTimeout})->wait();
          expectValues(
              a, [&](size_t i) { return reference(dt, op, n, i); }, "allreduce " + pair, n, ulps);
          Buffer r(p, count, dt);
          fillInput(r, op, rank);
          pg->reduce(r.tensor(), ReduceOptions{op, k % n, kUnsetTimeout})->wait();
          if (rank == k % n) {
            expectValues(
                r, [&](size_t i) { return reference(dt, op, n, i); }, "reduce " + pair, n, ulps);
          }
          Buffer in(p, count * n, dt), out(p, count, dt);
          fillInput(in, op, rank);
          pg->reduceScatterTensor(out.tensor(), in.tensor(),
                                  ReduceScatterOptions{op, kUnsetTimeout})
              ->wait();
          expectValues(
              out, [&](size_t i) { return reference(dt, op, n, rank * count + i); },
              "reduceScatterTensor " + pair, n, ulps);
        } else {
          const uint64_t seq = pg->sequenceNumber();
          const std::string why = std::string("reduce op ") + toString(kind) +
                                  " is not defined on " + toString(dt) + " tensors";
          Buffer a(p, count, dt), out(p, count, dt), in(p, count * n, dt);
          expectThrowsWith<InvalidArgument>(
              [&] {
                pg->allreduce(a.tensor(), AllreduceOptions{op, kUnsetTimeout});
              },
              {"allreduce" + prefixEnd + why});
          expectThrowsWith<InvalidArgument>(
              [&] {
                pg->reduce(a.tensor(), ReduceOptions{op, 0, kUnsetTimeout});
              },
              {"reduce" + prefixEnd + why});
          expectThrowsWith<InvalidArgument>(
              [&] {
                pg->reduceScatterTensor(out.tensor(), in.tensor(),
                                        ReduceScatterOptions{op, kUnsetTimeout});
              },
              {"reduce_scatter_tensor" + prefixEnd + why});
          expectThrowsWith<InvalidArgument>(
              [&] {
                pg->allreduceCoalesced({a.tensor()}, AllreduceOptions{op, kUnsetTimeout});
              },
              {"allreduce_coalesced" + prefixEnd + why});
          EXPECT_EQ(pg->sequenceNumber(), seq) << "a refused " << pair << " used a sequence number";
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
    // An op outside the enum is refused too, by name of its number.
    Buffer f(p, 3, DataType::kFloat32);
    ReduceOp bogus;
    bogus.kind = static_cast<ReduceOp::Kind>(ReduceOp::kNumKinds);
    expectThrowsWith<InvalidArgument>(
        [&] {
          pg->allreduce(f.tensor(), AllreduceOptions{bogus, kUnsetTimeout});
        },
        {"allreduce" + prefixEnd + "invalid reduce op " + std::to_string(ReduceOp::kNumKinds)});
    // Nothing refused was sent: the group is still in step.
    Buffer g(p, 7, DataType::kInt64);
    fillInput(g, ReduceOp::SUM, rank);
    pg->allreduce(g.tensor())->wait();
    expectValues(
        g, [&](size_t i) { return reference(DataType::kInt64, ReduceOp::SUM, n, i); },
        "allreduce after the refusals", n);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, Supports, ::testing::ValuesIn(conformanceBackends(3)),
                         [](const auto& info) { return info.param.label(); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Supports);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
