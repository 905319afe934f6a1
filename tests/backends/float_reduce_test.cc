// Conformance: floating-point reductions beyond small integers. Every reduce op a backend supports
// on f32, f64, f16 and bf16 (sum, avg, product, min, max, premul_sum), through allreduce, reduce
// and reduceScatterTensor, on
//   - dyadic fractions (x.25, x.5, -0.5, 1.25: exact in every dtype, compared exactly),
//   - 1e-3-scale values (not exact anywhere: within the error bound of any summation order),
//   - NaN on one rank, +Inf on one rank, +Inf and -Inf, Inf and 0, -Inf everywhere, -0 everywhere,
//     and values whose sum overflows the dtype,
// against the IEEE / NumPy result computed here: NaN propagates through sum, product, min and max
// (np.minimum / np.maximum, which is also what c10d/core/reduce_op.h documents for torch), Inf +
// -Inf and Inf * 0 are NaN, an overflowing sum is Inf, AVG is SUM / n (so Inf / NaN too; f16/bf16
// on a backend that sums them in f32, verbs by default: the f32 sum / n, rounded once), PREMUL_SUM
// scales each input first.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <tuple>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One element's inputs on every rank: value(rank, worldSize).
enum class Scenario {
  kFractions,     // -0.5, 1.25, 2, 0.75, ...: exact sums and products
  kMilli,         // (r + 1) * 1.001e-3 - 3e-4: rounded inputs, inexact sums
  kNaNOnOne,      // NaN on one rank, fractions elsewhere
  kInfOnOne,      // +Inf on one rank
  kInfAndNegInf,  // +Inf on one rank, -Inf on another (n >= 2; n = 1: +Inf)
  kInfAndZero,    // +Inf on one rank, 0 on another
  kNegInfAll,     // -Inf everywhere
  kNegZeroAll,    // -0 everywhere
  kOverflow,      // B on every rank, 2B past the dtype's max: sums overflow to Inf
};
constexpr int kNumScenarios = 9;

const char* name(Scenario s) {
  static const char* kNames[] = {"fractions",   "1e-3 scale",    "NaN on one rank",
                                 "+Inf on one", "+Inf and -Inf", "Inf and 0",
                                 "-Inf on all", "-0 on all",     "overflowing sum"};
  return kNames[static_cast<int>(s)];
}

// A power of two B with 2B past the dtype's largest finite value.
double bigValue(DataType dt) {
  switch (dt) {
    case DataType::kFloat16:
      return 32768;  // max 65504
    case DataType::kFloat64:
      return std::ldexp(1.0, 1023);
    default:
      return std::ldexp(1.0, 127);  // f32, bf16
  }
}

double fraction(int r) {
  // The odd parts multiply to 45: every partial product is exact even in bf16 (8 bits).
  static const double kValues[] = {-0.5, 1.25, 2, 0.75, -3, 4, -0.25, 0.5};
  return kValues[r % 8];
}

// Element k's scenario and the ranks it puts its special values on (they move with k).
struct Element {
  Scenario scenario;
  int a, b;  // special ranks (a != b when n >= 2)
};

Element elementAt(size_t k, int n) {
  Element e;
  e.scenario = static_cast<Scenario>(k % kNumScenarios);
  const int turn = static_cast<int>((k / kNumScenarios) % static_cast<size_t>(n));
  e.a = turn;
  e.b = (turn + 1 + static_cast<int>(k / kNumScenarios / n) % std::max(1, n - 1)) % n;
  return e;
}

double inputAt(DataType dt, const ReduceOp& op, size_t k, int r, int n) {
  const Element e = elementAt(k, n);
  switch (e.scenario) {
    case Scenario::kFractions:
      return fraction(r + static_cast<int>(k));
    case Scenario::kMilli:
      // Products of 1e-3s would underflow f16: near 1 instead.
      if (op.kind == ReduceOp::PRODUCT) return 1 + (r + 1) * 1.001e-3;
      return (r + 1) * 1.001e-3 - 3e-4 * static_cast<double>(k % 7);
    case Scenario::kNaNOnOne:
      return r == e.a ? kNaN : fraction(r);
    case Scenario::kInfOnOne:
      return r == e.a ? kInf : fraction(r);
    case Scenario::kInfAndNegInf:
      return r == e.a ? kInf : r == e.b ? -kInf : fraction(r);
    case Scenario::kInfAndZero:
      return r == e.a ? kInf : r == e.b ? 0.0 : fraction(r);
    case Scenario::kNegInfAll:
      return -kInf;
    case Scenario::kNegZeroAll:
      return -0.0;
    case Scenario::kOverflow:
      return bigValue(dt);
  }
  return 0;
}

// numpy.minimum / maximum: NaN wins.
double npMin(double x, double y) {
  return std::isnan(x) || std::isnan(y) ? kNaN : (y < x ? y : x);
}
double npMax(double x, double y) {
  return std::isnan(x) || std::isnan(y) ? kNaN : (x < y ? y : x);
}

struct Expected {
  double value;
  double tolerance;  // absolute; 0 = exact (NaN matches NaN; the sign of a zero is checked)
};

// The IEEE result for element k over n ranks, computed in double from the stored inputs and
// rounded once to the dtype. Exact when every partial result is exact (all scenarios but
// kMilli, and the overflowing sums, where every partial sum is a multiple of a power of two);
// kMilli gets the error bound of an arbitrary summation order.
Expected expected(DataType dt, const ReduceOp& op, size_t k, int n, bool wideHalf) {
  double acc = 0, absSum = 0;
  for (int r = 0; r < n; ++r) {
    double v = storedValue(dt, inputAt(dt, op, k, r, n));
    if (op.kind == ReduceOp::PREMUL_SUM) v = storedValue(dt, v * op.scale);
    if (r == 0) {
      acc = v;
    } else {
      switch (op.kind) {
        case ReduceOp::PRODUCT:
          acc *= v;
          break;
        case ReduceOp::MIN:
          acc = npMin(acc, v);
          break;
        case ReduceOp::MAX:
          acc = npMax(acc, v);
          break;
        default:
          acc += v;
      }
    }
    absSum += std::fabs(v);
  }
  // AVG is the sum in the dtype (which may overflow to Inf) divided by n; a half type summed in
  // f32 (`wideHalf`) overflows only past f32's range (bf16's own: an overflowing bf16 sum stays
  // Inf, an f16 one does not).
  const bool half = dt == DataType::kFloat16 || dt == DataType::kBFloat16;
  if (op.kind == ReduceOp::AVG) {
    acc = (half && wideHalf ? static_cast<double>(static_cast<float>(acc)) : storedValue(dt, acc)) /
          n;
  }
  const double want = storedValue(dt, acc);
  double tol = 0;
  const bool exactOp = op.kind == ReduceOp::MIN || op.kind == ReduceOp::MAX;
  if (elementAt(k, n).scenario == Scenario::kMilli && !exactOp) {
    double eps = 0;
    switch (dt) {
      case DataType::kFloat32:
        eps = std::ldexp(1.0, -24);
        break;
      case DataType::kFloat64:
        eps = std::ldexp(1.0, -53);
        break;
      case DataType::kFloat16:
        eps = std::ldexp(1.0, -11);
        break;
      default:
        eps = std::ldexp(1.0, -8);
    }
    // Each of n - 1 operations rounds once (in the dtype), the final rounding once more.
    const double mag =
        op.kind == ReduceOp::PRODUCT ? std::fabs(acc) : absSum / (op.kind == ReduceOp::AVG ? n : 1);
    tol = 2 * (n + 1) * eps * mag;
  }
  return {want, tol};
}

bool matches(double got, const Expected& e) {
  if (std::isnan(e.value)) return std::isnan(got);
  if (e.tolerance == 0) return got == e.value && std::signbit(got) == std::signbit(e.value);
  return std::fabs(got - e.value) <= e.tolerance;
}

const DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                DataType::kBFloat16};

std::string caseName(const ProcessGroup& pg, const char* coll, DataType dt, const ReduceOp& op,
                     size_t count) {
  std::ostringstream ss;
  ss << pg.backendName() << " rank " << pg.rank() << "/" << pg.size() << " " << coll << " "
     << toString(dt) << " " << toString(op) << " count " << count;
  return ss.str();
}

// expected() for the elements [offset, offset + count).
std::vector<Expected> expectedRange(DataType dt, const ReduceOp& op, size_t offset, size_t count,
                                    int n, bool wideHalf) {
  std::vector<Expected> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(expected(dt, op, offset + i, n, wideHalf));
  return out;
}

// verbs sums f16/bf16 in f32 unless C10D_HALF_ACCUM=half (options first, then the environment,
// as the backend reads it).
bool sumsHalfWide(const BackendParam& p) {
  if (p.backend != "verbs") return false;
  auto it = p.config.find("C10D_HALF_ACCUM");
  const char* env = std::getenv("C10D_HALF_ACCUM");
  const std::string v = it != p.config.end() ? it->second : env != nullptr ? env : "f32";
  return v != "half";
}

// Checks buf[i] against want[i], element offset + i of the inputs; reports the first mismatch.
void check(const Buffer& buf, const std::vector<Expected>& want, DataType dt, const ReduceOp& op,
           size_t offset, int n, const std::string& what) {
  const_cast<Buffer&>(buf).download();
  for (size_t i = 0; i < buf.numel(); ++i) {
    const Expected& e = want[i];
    const double got = buf.get(i);
    if (!matches(got, e)) {
      const Element el = elementAt(offset + i, n);
      std::ostringstream in;
      for (int r = 0; r < n; ++r) {
        in << (r ? ", " : "") << storedValue(dt, inputAt(dt, op, offset + i, r, n));
      }
      ADD_FAILURE() << what << ": element " << offset + i << " (" << name(el.scenario)
                    << ", inputs by rank [" << in.str() << "]) is " << got << ", expected "
                    << e.value << (e.tolerance > 0 ? " +- " + std::to_string(e.tolerance) : "");
      return;
    }
  }
}

void fill(Buffer& buf, DataType dt, const ReduceOp& op, int rank, int n) {
  for (size_t i = 0; i < buf.numel(); ++i) buf.set(i, inputAt(dt, op, i, rank, n));
  buf.upload();
}

class FloatReduce : public ::testing::TestWithParam<std::tuple<BackendParam, int>> {};

TEST_P(FloatReduce, SpecialValuesAndFractionsThroughEveryOp) {
  const BackendParam p = std::get<0>(GetParam());
  const int ws = std::get<1>(GetParam());
  const std::string path = uniqueTempPath("float-reduce");
  MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(200);
  expectAllRanksOk(
      ws,
      [&](int rank, int n) {
        auto pg = makeGroup(p, path, rank, n);
        // 32 rounds of the 9 scenarios (special values on different ranks), then a count past
        // 64 KiB (f16: 78 KiB) so that verbs over tcp runs ring / Rabenseifner instead of
        // recursive doubling and shm runs its chunked path.
        for (size_t count : {size_t{4} * kNumScenarios * 8, size_t{40001}}) {
          for (DataType dt : kFloatTypes) {
            int root = 0;
            for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
              const auto kind = static_cast<ReduceOp::Kind>(k);
              if (!isDefined(kind, dt) || !pg->supports(kind, dt, p.device)) continue;
              const ReduceOp op =
                  kind == ReduceOp::PREMUL_SUM ? ReduceOp::premulSum(0.5) : ReduceOp(kind);
              const std::vector<Expected> whole =
                  expectedRange(dt, op, 0, count, n, sumsHalfWide(p));
              const std::vector<Expected> mine =
                  expectedRange(dt, op, count * rank, count, n, sumsHalfWide(p));
              {
                Buffer b(p, count, dt);
                fill(b, dt, op, rank, n);
                pg->allreduce(b.tensor(), AllreduceOptions{op, kUnsetTimeout})->wait();
                check(b, whole, dt, op, 0, n, caseName(*pg, "allreduce", dt, op, count));
              }
              {
                root = (root + 1) % n;
                Buffer b(p, count, dt);
                fill(b, dt, op, rank, n);
                pg->reduce(b.tensor(), ReduceOptions{op, root, kUnsetTimeout})->wait();
                if (rank == root) {
                  check(b, whole, dt, op, 0, n, caseName(*pg, "reduce", dt, op, count));
                }
              }
              {
                Buffer in(p, count * n, dt), out(p, count, dt);
                fill(in, dt, op, rank, n);
                pg->reduceScatterTensor(out.tensor(), in.tensor(),
                                        ReduceScatterOptions{op, kUnsetTimeout})
                    ->wait();
                check(out, mine, dt, op, count * rank, n,
                      caseName(*pg, "reduceScatterTensor", dt, op, count));
              }
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
      },
      mp);
}

INSTANTIATE_TEST_SUITE_P(Backends, FloatReduce, ::testing::ValuesIn(conformanceCases({2, 3, 8})),
                         [](const auto& info) {
                           return paramName(std::get<0>(info.param), std::get<1>(info.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FloatReduce);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
