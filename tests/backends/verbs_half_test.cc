// f16/bf16 SUM and AVG on the verbs backend sum in f32 and round once (C10D_HALF_ACCUM=f32,
// algorithms/reduce_kernels.h): allreduce (in place and out of place), reduce and
// reduceScatterTensor must equal the float64 sum of the inputs (AVG: divided by n) rounded once
// to the dtype, bit for bit, on every rank, through every algorithm the table can choose (each
// forced with C10D_ALGO), over shm and tcp, at n = 2, 3, 4, and across "hosts" (hierarchical).
//
// The inputs are (1 + k / 2^(p-1)) * 2^e with random k and e in [-4, 4] (f16: [-3, 3]) and random
// signs: every partial sum of up to 8 of them is exact in f32 (at most 21 significant bits), so
// one rounding is exactly the reference, while rounding each partial sum to the dtype (per hop,
// as C10D_HALF_ACCUM=half does) misses it in most elements. The reference rounds the exact value
// here by scaling to an integer (nearbyint), independently of the library's conversions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "c10d/base/abi.h"
#include "tests/backends/conformance.h"
#include "tests/backends/verbs_case.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

int precision(DataType dt) {
  return dt == DataType::kFloat16 ? 11 : 8;
}

double input(DataType dt, int rank, size_t i) {
  const uint64_t h = mix((static_cast<uint64_t>(rank + 1) << 40) ^ (i * 0x9e3779b97f4a7c15ull));
  const int p = precision(dt);
  const double k = static_cast<double>((h >> 20) % (1u << (p - 1)));
  const int range = dt == DataType::kFloat16 ? 3 : 4;
  const int e = static_cast<int>((h >> 8) % (2 * range + 1)) - range;
  return ((h & 1) ? -1 : 1) * std::ldexp(1 + k / std::ldexp(1, p - 1), e);
}

// x rounded once to dt (nearest, ties to even), as raw bits; no overflow here, but sums that
// cancel reach the subnormals (where the ulp stays that of the smallest normal binade).
uint16_t roundOnce(double x, DataType dt) {
  if (x != 0) {
    int e;
    std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    const int minNormalExp = dt == DataType::kFloat16 ? -14 : -126;
    const double ulp = std::ldexp(1, std::max(e - 1, minNormalExp) + 1 - precision(dt));
    x = std::nearbyint(x / ulp) * ulp;  // exact, and exact in f32 and in dt
  }
  const float f = static_cast<float>(x);
  return dt == DataType::kFloat16 ? floatToHalf(f) : floatToBf16(f);
}

uint16_t reference(DataType dt, bool avg, int n, size_t i) {
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += input(dt, r, i);  // exact: < 30 significant bits
  return roundOnce(avg ? sum / n : sum, dt);
}

// Elements [first, first + count) of the reduction are in b (raw half bits).
void expectOneRounding(const uint16_t* got, size_t first, size_t count, DataType dt, bool avg,
                       int n, const std::string& what) {
  size_t bad = 0, firstBad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != reference(dt, avg, n, first + i)) {
      if (bad++ == 0) firstBad = i;
    }
  }
  if (bad == 0) return;
  const size_t i = first + firstBad;
  std::ostringstream ss;
  ss << what << ": " << bad << " of " << count << " elements differ from the float64 sum rounded "
     << "once; first: element " << i << " is 0x" << std::hex << got[firstBad] << ", want 0x"
     << reference(dt, avg, n, i) << std::dec << " (inputs";
  for (int r = 0; r < n; ++r) ss << " " << input(dt, r, i);
  ss << ")";
  ADD_FAILURE() << ss.str();
}

class VerbsHalfOneRounding : public ::testing::TestWithParam<VerbsCase> {};

TEST_P(VerbsHalfOneRounding, EqualsTheFloat64SumRoundedOnce) {
  const VerbsCase& c = GetParam();
  runVerbsCase(c, "verbs-half", [&](ProcessGroup& group, const BackendParam& p, int rank, int n) {
    ProcessGroup* pg = &group;
    // 1001: the one-barrier shm path, recursive doubling; 300001 (600 KB): chunked shm, the
    // ring and Rabenseifner with several segments, the hierarchical algorithms.
    for (size_t count : {size_t{1001}, size_t{300001}}) {
      for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
        for (ReduceOp::Kind k : {ReduceOp::SUM, ReduceOp::AVG}) {
          const bool avg = k == ReduceOp::AVG;
          std::ostringstream tag;
          tag << c.name << " rank " << rank << "/" << n << " " << toString(dt) << " " << toString(k)
              << " count " << count;
          Buffer in(p, count, dt), out(p, count, dt);
          for (size_t i = 0; i < count; ++i) in.set(i, input(dt, rank, i));
          auto half = [](Buffer& b) { return reinterpret_cast<const uint16_t*>(b.host()); };

          pg->allreduceInto(out.tensor(), in.tensor(), AllreduceOptions{k, kUnsetTimeout})->wait();
          expectOneRounding(half(out), 0, count, dt, avg, n, tag.str() + " allreduce");
          pg->allreduce(in.tensor(), AllreduceOptions{k, kUnsetTimeout})->wait();
          expectOneRounding(half(in), 0, count, dt, avg, n, tag.str() + " allreduce in place");

          for (size_t i = 0; i < count; ++i) in.set(i, input(dt, rank, i));
          const int root = n - 1;
          pg->reduceInto(out.tensor(), in.tensor(), ReduceOptions{k, root, kUnsetTimeout})->wait();
          if (rank == root)
            expectOneRounding(half(out), 0, count, dt, avg, n, tag.str() + " reduce");

          // reduceScatterTensor: element j of block r is element r * block + j of the inputs.
          const size_t block = count / static_cast<size_t>(n);
          Buffer rs(p, block, dt);
          pg->reduceScatterTensor(rs.tensor(), Tensor(in.host(), block * n, dt),
                                  ReduceScatterOptions{k, kUnsetTimeout})
              ->wait();
          expectOneRounding(half(rs), rank * block, block, dt, avg, n,
                            tag.str() + " reduce_scatter");
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  });
}

std::vector<VerbsCase> halfCases() {
  std::vector<VerbsCase> out;
  // Every algorithm the tables can choose for the three collectives, forced: shm (allreduce,
  // reduce), the stream algorithms over shm streams and over tcp, hierarchical across "hosts".
  const std::vector<std::pair<std::string, std::string>> forced = {
      {"default", ""},
      {"ring_binomial", "allreduce:ring,reduce:binomial,reduce_scatter:ring"},
      {"recursive_doubling", "allreduce:recursive_doubling"},
      {"rabenseifner", "allreduce:rabenseifner"},
  };
  for (int ws : {2, 3, 4}) {
    for (const auto& [name, algo] : forced) {
      for (const char* transport : {"shm", "tcp"}) {
        VerbsCase hc{std::string(transport) + "_" + name, {}, ws};
        if (std::string(transport) == "tcp") hc.config["C10D_TRANSPORT"] = "tcp";
        if (!algo.empty()) hc.config["C10D_ALGO"] = algo;
        out.push_back(hc);
      }
    }
  }
  // Groups across "hosts" (C10D_HOST_ID): hierarchical allreduce and reduce_scatter, balanced
  // and leader-based.
  out.push_back({"hier_balanced", {}, 4, {"a", "a", "b", "b"}});
  out.push_back({"hier_leaders", {}, 3, {"a", "b", "a"}});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, VerbsHalfOneRounding, ::testing::ValuesIn(halfCases()),
                         [](const ::testing::TestParamInfo<VerbsCase>& info) {
                           return info.param.name + "_ws" + std::to_string(info.param.worldSize);
                         });

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
