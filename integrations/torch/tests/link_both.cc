// A program linked against libtorch and libc10d, both DT_NEEDED (no dlopen): torch makes the
// tensors, our allreduce sums their data across the ranks c10drun starts. Before c10d::v1 the two
// libraries defined 79 of the same symbols (c10d::PrefixStore::get, ...), and one of each bound at
// random. link_both_named.cc names torch's and our c10d types in one translation unit.
#include <ATen/ATen.h>

#include <cstdio>
#include <string>

#include <c10d/c10d.h>

std::string storesBothWork();  // link_both_named.cc

int main() {
  auto pg = c10d::init({/*backend=*/"", /*initMethod=*/"env://"});
  const int64_t n = 1000;
  at::Tensor t = at::arange(n, at::kFloat) * static_cast<float>(pg->rank() + 1);
  pg->allreduce(c10d::tensorOf(t.data_ptr<float>(), static_cast<size_t>(t.numel())),
                {c10d::ReduceOp::SUM})
      ->wait();
  const int ws = pg->size();
  at::Tensor want = at::arange(n, at::kFloat) * static_cast<float>(ws * (ws + 1) / 2);
  if (!at::equal(t, want)) {
    std::fprintf(stderr, "rank %d: allreduce over torch's tensor: got %s, want %s\n", pg->rank(),
                 at::sum(t).toString().c_str(), at::sum(want).toString().c_str());
    return 1;
  }
  std::string stores = storesBothWork();
  if (!stores.empty()) {
    std::fprintf(stderr, "rank %d: %s\n", pg->rank(), stores.c_str());
    return 1;
  }
  pg->barrier()->wait();
  std::printf(
      "rank %d of %d: allreduce of a torch tensor through libc10d: ok; torch's and our "
      "HashStore side by side: ok\n",
      pg->rank(), ws);
  return 0;
}
