// half_rounding: the error of an f16/bf16 sum across n ranks against the float64 sum, per-hop
// rounding (every partial sum rounded to the half type, C10D_HALF_ACCUM=half, as NCCL's ring and
// Gloo) against partial sums kept in f32 and rounded once (C10D_HALF_ACCUM=f32), in the two
// summation orders the verbs algorithms use:
//   chain: x0 + x1 + ... in sequence (a ring's block, the shm algorithms, which sum rank by rank)
//   tree:  pairwise halves (recursive doubling, Rabenseifner, the binomial reduce).
// Ranks are simulated in one process (no communication): each rank's input is N(0, 1) rounded
// to the half type, like a gradient. Per-hop additions are done as the library's kernels do
// (in f32, rounded to the half type after each one). For each case: the share of elements equal
// to the float64 sum rounded once and the mean |error| relative to the mean |float64 sum| (the
// "f32 once" columns show what the final rounding alone costs).
//
//   half_rounding [--elems N] [--ranks 2,4,8,64,512] [--seed S]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "c10d/base/types.h"

namespace {

using c10d::DataType;

float toFloat(uint16_t h, DataType dt) {
  return dt == DataType::kFloat16 ? c10d::halfToFloat(h) : c10d::bf16ToFloat(h);
}

uint16_t fromFloat(float f, DataType dt) {
  return dt == DataType::kFloat16 ? c10d::floatToHalf(f) : c10d::floatToBf16(f);
}

float roundTo(float f, DataType dt) {
  return toFloat(fromFloat(f, dt), dt);
}

// x rounded once to dt, exactly (scaled to an integer in double; subnormals included).
double roundOnce(double x, DataType dt) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int p = dt == DataType::kFloat16 ? 11 : 8;
  const int minExp = dt == DataType::kFloat16 ? -14 : -126;
  int e;
  std::frexp(x, &e);
  const double ulp = std::ldexp(1, std::max(e - 1, minExp) + 1 - p);
  return std::nearbyint(x / ulp) * ulp;
}

// Sum of v[lo, hi) in the given order; `hop`: every partial sum rounded to dt.
float chain(const float* v, int n, bool hop, DataType dt) {
  float acc = v[0];
  for (int i = 1; i < n; ++i) acc = hop ? roundTo(acc + v[i], dt) : acc + v[i];
  return acc;
}

float tree(const float* v, int n, bool hop, DataType dt) {
  if (n == 1) return v[0];
  const int h = n / 2;
  const float s = tree(v, h, hop, dt) + tree(v + h, n - h, hop, dt);
  return hop ? roundTo(s, dt) : s;
}

struct Stats {
  size_t exact = 0, n = 0;
  double absErr = 0, absRef = 0;
  void add(double got, double ref, double want) {
    ++n;
    exact += got == want;
    absErr += std::fabs(got - ref);
    absRef += std::fabs(ref);
  }
  std::string cell() const {
    char buf[96];
    if (exact == n) {
      std::snprintf(buf, sizeof(buf), "all / %.2e", absErr / absRef);
    } else {
      std::snprintf(buf, sizeof(buf), "%.2f%% / %.2e", 100.0 * exact / n, absErr / absRef);
    }
    return buf;
  }
};

std::vector<int> parseList(const char* s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t elems = 65536;
  std::vector<int> ranks = {2, 4, 8, 64, 512};
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--elems")) {
      elems = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--ranks")) {
      ranks = parseList(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--seed")) {
      seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "usage: %s [--elems N] [--ranks 2,4,8] [--seed S]\n", argv[0]);
      return 2;
    }
  }
  std::printf(
      "# cell: elements equal to the float64 sum rounded once (all, or the share) / mean |error| "
      "/ mean |float64 sum|; inputs N(0,1) in the dtype, %zu elements\n",
      elems);
  std::printf(
      "| dtype | ranks | chain, per hop | chain, f32 once | tree, per hop | tree, f32 once |\n");
  std::printf("|---|---:|---|---|---|---|\n");
  for (DataType dt : {DataType::kBFloat16, DataType::kFloat16}) {
    for (int n : ranks) {
      std::mt19937_64 gen(seed + static_cast<unsigned>(n));
      std::normal_distribution<float> normal(0, 1);
      std::vector<float> v(static_cast<size_t>(n));
      Stats s[4];
      for (size_t i = 0; i < elems; ++i) {
        double ref = 0;
        for (auto& x : v) {
          x = roundTo(normal(gen), dt);
          ref += x;  // exact unless an input is below ~2^-35 (probability ~1e-10 each)
        }
        const double want = roundOnce(ref, dt);
        const float got[4] = {
            roundTo(chain(v.data(), n, true, dt), dt), roundTo(chain(v.data(), n, false, dt), dt),
            roundTo(tree(v.data(), n, true, dt), dt), roundTo(tree(v.data(), n, false, dt), dt)};
        for (int k = 0; k < 4; ++k) s[k].add(got[k], ref, want);
      }
      std::printf("| %s | %d | %s | %s | %s | %s |\n", c10d::toString(dt), n, s[0].cell().c_str(),
                  s[1].cell().c_str(), s[2].cell().c_str(), s[3].cell().c_str());
    }
  }
  return 0;
}
