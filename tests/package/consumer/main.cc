// An outside program built against the installed Debian packages (scripts/package-test.sh): an
// allreduce over the ranks c10drun starts, checked against the sum computed here. argv[1] names
// the backend (default: the best available).
#include <c10d/c10d.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  auto pg = c10d::init({/*backend=*/argc > 1 ? argv[1] : "", /*initMethod=*/"env://"});
  const int n = pg->size();
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(pg->rank() + 1) * float(i);
  pg->allreduce(c10d::tensorOf(x.data(), x.size()), {c10d::ReduceOp::SUM})->wait();
  const float ranks = float(n * (n + 1) / 2);  // sum of rank + 1 over the ranks
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != ranks * float(i)) {
      std::fprintf(stderr, "rank %d: element %zu is %g, expected %g\n", pg->rank(), i, x[i],
                   ranks * float(i));
      return 1;
    }
  }
  pg->barrier()->wait();
  std::printf("rank %d of %d: allreduce of %zu floats on backend %s correct (c10d %s)\n",
              pg->rank(), n, x.size(), pg->backendName().c_str(), C10D_VERSION);
  return 0;
}
