// Replays, on the DDP Reducer, the training steps integrations/torch/tests/reducer_vs_torch.py
// runs through torch's DistributedDataParallel, and writes the averaged gradients for it to compare
// byte for byte. Run as every rank of a group (c10drun sets the env:// variables):
//   reducer_replay DIR
// DIR/cases holds one case per line: "name dtype(f32|f64) mode micro steps n", mode one of
//   copy         grads copied into the buckets; the framework zeroes its grad in place each step
//   view-inplace gradientAsBucketView; step 1's grad is outside the bucket (torch's autograd
//                makes it), later steps accumulate into gradView (zero_grad(set_to_none=False))
//   view-none    gradientAsBucketView; every step's grad is outside the bucket
//                (zero_grad(set_to_none=True))
// DIR/<name>.in holds the gradients, dtype elements in the order [rank][step][micro][n]; the
// first micro - 1 micro-batches of a step run under noSync (torch's no_sync()). Writes
// DIR/<name>.ours.<rank>: the gradient after each step's finalize, [step][n].
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "c10d/bootstrap/init.h"
#include "c10d/layers/ddp/reducer.h"

namespace {

using c10d::DataType;
using c10d::Tensor;

struct Case {
  std::string name, dtype, mode;
  size_t micro = 1, steps = 1, n = 0;
};

std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("reducer_replay: cannot read " + path);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

// dst += src, element-wise in the dtype (as torch's AccumulateGrad adds).
void accumulate(const Tensor& dst, const char* src, bool f32) {
  for (size_t e = 0; e < dst.numel; ++e) {
    if (f32) {
      float v;
      std::memcpy(&v, src + e * 4, 4);
      static_cast<float*>(dst.data)[e] += v;
    } else {
      double v;
      std::memcpy(&v, src + e * 8, 8);
      static_cast<double*>(dst.data)[e] += v;
    }
  }
}

void runCase(const Case& c, const std::string& dir, const std::shared_ptr<c10d::ProcessGroup>& pg) {
  const bool f32 = c.dtype == "f32";
  const DataType dt = f32 ? DataType::kFloat32 : DataType::kFloat64;
  const size_t esize = f32 ? 4 : 8;
  const size_t rowBytes = c.n * esize;
  const std::vector<char> in = readFile(dir + "/" + c.name + ".in");
  const size_t perRank = c.steps * c.micro * rowBytes;
  if (in.size() != perRank * static_cast<size_t>(pg->size())) {
    throw std::runtime_error("reducer_replay: " + c.name + ".in has " + std::to_string(in.size()) +
                             " bytes, expected " + std::to_string(perRank * pg->size()));
  }
  const char* mine = in.data() + perRank * static_cast<size_t>(pg->rank());
  std::vector<char> data(rowBytes, 0), grad(rowBytes, 0), outside(rowBytes, 0);
  c10d::ddp::ReducerOptions opts;
  opts.gradientAsBucketView = c.mode != "copy";
  c10d::ddp::Reducer red({{"weight", Tensor(data.data(), c.n, dt), Tensor(grad.data(), c.n, dt)}},
                         pg, opts);
  std::ofstream out(dir + "/" + c.name + ".ours." + std::to_string(pg->rank()), std::ios::binary);
  for (size_t step = 0; step < c.steps; ++step) {
    // Where this step's gradient accumulates: the bucket view from step 2 on in view-inplace.
    const bool inView = c.mode == "view-inplace" && step > 0;
    const Tensor g = c.mode == "copy" ? Tensor(grad.data(), c.n, dt)
                     : inView         ? red.gradView(0)
                                      : Tensor(outside.data(), c.n, dt);
    std::memset(g.data, 0, rowBytes);  // zero_grad: in place, or a fresh tensor
    for (size_t m = 0; m < c.micro; ++m) {
      accumulate(g, mine + (step * c.micro + m) * rowBytes, f32);
      const bool last = m + 1 == c.micro;
      auto guard = last ? std::optional<c10d::ddp::Reducer::NoSyncGuard>()
                        : std::optional<c10d::ddp::Reducer::NoSyncGuard>(red.noSync());
      if (c.mode == "copy" || inView) {
        red.markReady(0);
      } else {
        red.markReady(0, g);
      }
      red.finalize();
    }
    const Tensor result = c.mode == "copy" ? g : red.gradView(0);
    out.write(static_cast<const char*>(result.data), static_cast<std::streamsize>(rowBytes));
  }
  if (!out) throw std::runtime_error("reducer_replay: cannot write the result of " + c.name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: reducer_replay DIR (see the header of tests/layers/reducer_replay.cc)\n";
    return 2;
  }
  const std::string dir = argv[1];
  try {
    auto pg = c10d::init(c10d::InitOptions{});  // env://, the default backend
    std::ifstream cases(dir + "/cases");
    std::string line;
    size_t ran = 0;
    while (std::getline(cases, line)) {
      std::istringstream ls(line);
      Case c;
      if (!(ls >> c.name >> c.dtype >> c.mode >> c.micro >> c.steps >> c.n)) continue;
      runCase(c, dir, pg);
      ++ran;
    }
    pg->barrier()->wait();
    if (pg->rank() == 0) std::cout << "reducer_replay: " << ran << " cases\n";
    return ran > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "reducer_replay: " << e.what() << "\n";
    return 1;
  }
}
