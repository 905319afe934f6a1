// The verbs backend's guarantee that allreduce leaves identical bits on every rank
// (allreduce_shm.cc, allreduce_recursive_doubling.cc, allreduce_rabenseifner.cc say so; the ring
// reduces each chunk on one rank and copies it). Checked where it can break: float inputs whose sum
// depends on the order of additions (magnitudes from 2^-20 to 2^20, random mantissas), products of
// values near 1, for f32, f64, f16 and bf16, every float op, through the shm algorithm and through
// ring, recursive doubling and Rabenseifner forced over shm streams and over tcp, at power-of-two
// and folded world sizes, and through the hierarchical allreduce of groups across "hosts". Each
// rank hashes its result and the hashes are allgathered; on a mismatch the full results are
// allgathered to name the first differing element. Results are also checked against the exact sum
// within the error bound of any summation order, so identical garbage fails too.
//
// A second test mixes in signed zeros (+0 on even ranks, -0 on odd) and NaNs of both signs: MIN
// and MAX of -0 and +0, and sums of two NaNs, depend on operand order in IEEE arithmetic, so an
// algorithm in which both partners of an exchange compute `mine op theirs` ends with different
// bits on the two sides.
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/hash.h"
#include "tests/backends/conformance.h"
#include "tests/backends/verbs_case.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

// Order-sensitive finite input: +-(1 + f) * 2^e, e in [-20, 20] (f16: [-8, 8]); for PRODUCT,
// 1 +- f/16 so that products neither overflow nor underflow.
double finiteInput(DataType dt, ReduceOp::Kind op, int rank, size_t i) {
  const uint64_t h = mix((static_cast<uint64_t>(rank) << 32) ^ (i * 0x9e3779b97f4a7c15ull));
  const double f = static_cast<double>(h >> 40) / static_cast<double>(1ull << 24);  // [0, 1)
  if (op == ReduceOp::PRODUCT) return 1 + ((h & 1) ? f : -f) / 16;
  const int range = dt == DataType::kFloat16 ? 8 : 20;
  const int e = static_cast<int>((h >> 8) % (2 * range + 1)) - range;
  return ((h & 1) ? -1 : 1) * std::ldexp(1 + f, e);
}

// With `specials`, every 5th element is a signed zero (+0 on even ranks, -0 on odd) and every 7th
// is NaN on ranks 0 and 1 (positive on rank 0, negative on rank 1).
double input(DataType dt, ReduceOp::Kind op, int rank, size_t i, bool specials) {
  if (specials && i % 7 == 3 && rank <= 1) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return rank == 0 ? nan : -nan;
  }
  if (specials && i % 5 == 1) return rank % 2 == 0 ? 0.0 : -0.0;
  return finiteInput(dt, op, rank, i);
}

double epsilon(DataType dt) {
  switch (dt) {
    case DataType::kFloat32:
      return std::ldexp(1.0, -24);
    case DataType::kFloat64:
      return std::ldexp(1.0, -53);
    case DataType::kFloat16:
      return std::ldexp(1.0, -11);
    default:
      return std::ldexp(1.0, -8);
  }
}

// All ranks' result bytes agree; else one failure naming the first differing element.
void expectSameBitsEverywhere(ProcessGroup& pg, const BackendParam& p, Buffer& result,
                              const std::string& what) {
  const int n = pg.size();
  const size_t bytes = result.numel() * elementSize(result.dtype());
  int64_t mine = static_cast<int64_t>(fnv1a(result.host(), bytes));
  std::vector<int64_t> all(n);
  pg.allgatherIntoTensor(tensorOf(all.data(), all.size()), tensorOf(&mine, 1))->wait();
  bool same = true;
  for (int r = 0; r < n; ++r) same = same && all[r] == all[0];
  if (same) return;
  // Every rank saw the same hashes, so all take this branch: gather the results themselves.
  std::vector<uint8_t> everyone(bytes * n);
  pg.allgatherIntoTensor(Tensor(everyone.data(), everyone.size(), DataType::kUInt8),
                         Tensor(result.host(), bytes, DataType::kUInt8))
      ->wait();
  const size_t es = elementSize(result.dtype());
  for (size_t i = 0; i < result.numel(); ++i) {
    bool differs = false;
    for (int r = 1; r < n; ++r) {
      differs = differs || std::memcmp(&everyone[r * bytes + i * es], &everyone[i * es], es) != 0;
    }
    if (!differs) continue;
    std::ostringstream ss;
    ss << what << ": ranks disagree on element " << i << " of " << result.numel() << ":";
    for (int r = 0; r < n; ++r) {
      Buffer one(p, 1, result.dtype());
      std::memcpy(one.host(), &everyone[r * bytes + i * es], es);
      uint64_t raw = 0;
      std::memcpy(&raw, &everyone[r * bytes + i * es], es);
      ss << " rank " << r << " = " << one.get(0) << " (0x" << std::hex << raw << std::dec << ")";
    }
    ADD_FAILURE() << ss.str();
    return;
  }
}

// The result is the reduction of the inputs within what any order of rounded operations allows.
void expectCorrect(const Buffer& b, DataType dt, const ReduceOp& op, int n, bool specials,
                   const std::string& what) {
  for (size_t i = 0; i < b.numel(); ++i) {
    long double sum = 0, absSum = 0, prod = 1;
    double mn = 0, mx = 0;
    bool nan = false;
    for (int r = 0; r < n; ++r) {
      double v = storedValue(dt, input(dt, op.kind, r, i, specials));
      nan = nan || std::isnan(v);
      // Each rank scales its input in its dtype first.
      if (op.kind == ReduceOp::PREMUL_SUM) v = storedValue(dt, v * op.scale);
      sum += v;
      absSum += std::fabs(v);
      prod *= v;
      mn = r == 0 ? v : std::min(mn, v);
      mx = r == 0 ? v : std::max(mx, v);
    }
    const double got = b.get(i);
    bool ok;
    if (nan) {
      ok = std::isnan(got);
    } else if (op.kind == ReduceOp::MIN || op.kind == ReduceOp::MAX) {
      ok = got == (op.kind == ReduceOp::MIN ? mn : mx);
    } else if (op.kind == ReduceOp::PRODUCT) {
      ok = std::fabs(got - static_cast<double>(prod)) <=
           2 * (n + 1) * epsilon(dt) * std::fabs(static_cast<double>(prod));
    } else {
      const long double want = op.kind == ReduceOp::AVG ? sum / n : sum;
      const long double bound =
          2 * (n + 1) * epsilon(dt) * absSum / (op.kind == ReduceOp::AVG ? n : 1);
      ok = std::fabs(static_cast<long double>(got) - want) <= bound;
    }
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " is " << got
                    << ", not the reduction of the inputs";
      return;
    }
  }
}

class VerbsIdenticalBits : public ::testing::TestWithParam<VerbsCase> {};

void run(const VerbsCase& c, bool specials) {
  runVerbsCase(c, "verbs-bits", [&](ProcessGroup& group, const BackendParam& p, int rank, int n) {
    ProcessGroup* pg = &group;
    for (size_t count : {size_t{1001}, size_t{70001}}) {
      for (DataType dt :
           {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
        for (ReduceOp op :
             {ReduceOp(ReduceOp::SUM), ReduceOp(ReduceOp::AVG), ReduceOp::premulSum(0.1),
              ReduceOp(ReduceOp::PRODUCT), ReduceOp(ReduceOp::MIN), ReduceOp(ReduceOp::MAX)}) {
          // Signed zeros and NaNs only matter where operand order can show: min, max, sum.
          if (specials && op.kind != ReduceOp::MIN && op.kind != ReduceOp::MAX &&
              op.kind != ReduceOp::SUM) {
            continue;
          }
          Buffer b(p, count, dt);
          for (size_t i = 0; i < count; ++i) b.set(i, input(dt, op.kind, rank, i, specials));
          pg->allreduce(b.tensor(), AllreduceOptions{op, kUnsetTimeout})->wait();
          std::ostringstream what;
          what << c.name << " rank " << rank << "/" << n << " allreduce " << toString(dt) << " "
               << toString(op) << " count " << count;
          expectSameBitsEverywhere(*pg, p, b, what.str());
          expectCorrect(b, dt, op, n, specials, what.str());
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  });
}

TEST_P(VerbsIdenticalBits, OrderSensitiveFloats) {
  run(GetParam(), false);
}

TEST_P(VerbsIdenticalBits, SignedZerosAndNaNs) {
  run(GetParam(), true);
}

std::vector<VerbsCase> bitsCases() {
  std::vector<VerbsCase> out;
  const std::map<std::string, std::string> tcp = {{"C10D_TRANSPORT", "tcp"}};
  for (int ws : {3, 4, 8}) {
    out.push_back({"shm", {}, ws});   // the shm allreduce (direct reduce from every slot)
    out.push_back({"tcp", tcp, ws});  // recursive doubling <= 32/64 KiB, then ring / Rabenseifner
  }
  for (const char* algo : {"ring", "recursive_doubling", "rabenseifner"}) {
    for (int ws : {4, 5}) {
      const std::string a = std::string("allreduce:") + algo;
      out.push_back({std::string("shm_") + algo, {{"C10D_ALGO", a}}, ws});
      out.push_back(
          {std::string("tcp_") + algo, {{"C10D_TRANSPORT", "tcp"}, {"C10D_ALGO", a}}, ws});
    }
  }
  // Groups across "hosts" (C10D_HOST_ID): the hierarchical allreduce, balanced (reduce-scatter
  // inside hosts, allreduce across, allgather inside) and leader-based (hosts of 2 and 1).
  out.push_back({"hier_balanced", {}, 4, {"a", "a", "b", "b"}});
  out.push_back({"hier_leaders", {}, 3, {"a", "b", "a"}});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, VerbsIdenticalBits, ::testing::ValuesIn(bitsCases()),
                         [](const ::testing::TestParamInfo<VerbsCase>& info) {
                           return info.param.name + "_ws" + std::to_string(info.param.worldSize);
                         });

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
