// Runs norm::SyncBatchNorm on this rank's share of the global batches that
// integrations/torch/tests/sync_batch_norm_vs_torch.py gives torch.nn.BatchNorm1d whole, and
// writes what it computed for the script to compare. Every rank of a group (c10drun sets the
// env:// variables):  sync_batch_norm_replay DIR
// DIR/cases: one case per line, "name affine(0/1) track(0/1) channels length iterations b0,b1,..."
// (b_r: rank r's samples per batch). DIR/<name>.in: fp32, global batches [B][C][L] in this order:
// weight[C], bias[C], then per iteration x, dy, a mid-iteration evaluation input, and last one
// more evaluation input. Each iteration: train forward x; evaluation forward (the mid input);
// backward dy (of the training forward: the evaluation between must not change it). Then one
// evaluation forward. Writes DIR/<name>.ours.<rank>: per iteration y, the mid evaluation's y, dx
// (this rank's samples), then the last evaluation's y; then running mean, running var and the
// weight and bias gradients summed over the group (fp32; the last four identical on every rank).
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "c10d/bootstrap/init.h"
#include "c10d/layers/norm/sync_batch_norm.h"

namespace {

using c10d::DataType;
using c10d::Tensor;

Tensor view(std::vector<float>& v) {
  return Tensor(v.data(), v.size(), DataType::kFloat32);
}

void runCase(const std::string& line, const std::string& dir,
             const std::shared_ptr<c10d::ProcessGroup>& pg) {
  std::istringstream ls(line);
  std::string name, batchList;
  int affine = 0, track = 0;
  size_t c = 0, len = 0, iterations = 0;
  if (!(ls >> name >> affine >> track >> c >> len >> iterations >> batchList)) return;
  std::vector<size_t> batches;
  std::istringstream bl(batchList);
  for (std::string b; std::getline(bl, b, ',');) batches.push_back(std::stoul(b));
  if (batches.size() != static_cast<size_t>(pg->size())) {
    throw std::runtime_error(name + ": " + std::to_string(batches.size()) + " batches for " +
                             std::to_string(pg->size()) + " ranks");
  }
  const size_t global = std::accumulate(batches.begin(), batches.end(), size_t{0});
  const size_t sample = c * len;
  const size_t mine = batches[static_cast<size_t>(pg->rank())];
  const size_t first =
      std::accumulate(batches.begin(), batches.begin() + pg->rank(), size_t{0}) * sample;

  std::ifstream in(dir + "/" + name + ".in", std::ios::binary);
  std::vector<float> all((2 * c + (3 * iterations + 1) * global * sample));
  in.read(reinterpret_cast<char*>(all.data()), static_cast<std::streamsize>(all.size() * 4));
  if (!in) throw std::runtime_error(name + ".in is shorter than its case says");
  size_t at = 2 * c;
  auto next = [&] {  // this rank's share of the next global batch
    std::vector<float> v(all.begin() + static_cast<std::ptrdiff_t>(at + first),
                         all.begin() + static_cast<std::ptrdiff_t>(at + first + mine * sample));
    at += global * sample;
    return v;
  };

  c10d::norm::SyncBatchNormOptions o;
  o.affine = affine != 0;
  o.trackRunningStats = track != 0;
  c10d::norm::SyncBatchNorm bn(pg, c, o);
  if (o.affine) {
    std::memcpy(bn.weight().data, all.data(), c * 4);
    std::memcpy(bn.bias().data, all.data() + c, c * 4);
  }
  std::ofstream out(dir + "/" + name + ".ours." + std::to_string(pg->rank()), std::ios::binary);
  auto write = [&](const Tensor& t) {
    out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.nbytes()));
  };
  std::vector<std::vector<float>> xs;  // a training input stays alive until its backward
  for (size_t it = 0; it < iterations; ++it) {
    xs.push_back(next());
    std::vector<float> dy = next(), mid = next();
    std::vector<float> y(xs.back().size()), ymid(mid.size()), dx(dy.size());
    bn.setTraining(true);
    bn.forward(view(xs.back()), mine, view(y));
    bn.setTraining(false);
    bn.forward(view(mid), mine, view(ymid));
    bn.backward(view(dy), view(dx));
    write(view(y));
    write(view(ymid));
    write(view(dx));
  }
  std::vector<float> last = next(), ylast(last.size());
  bn.forward(view(last), mine, view(ylast));
  write(view(ylast));
  write(bn.runningMean());
  write(bn.runningVar());
  std::vector<float> grads(2 * c, 0.0f);
  if (o.affine) {
    std::memcpy(grads.data(), bn.weightGrad().data, c * 4);
    std::memcpy(grads.data() + c, bn.biasGrad().data, c * 4);
  }
  pg->allreduce(view(grads))->wait();
  write(view(grads));
  if (!out) throw std::runtime_error("cannot write the result of " + name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: sync_batch_norm_replay DIR (see tests/layers/sync_batch_norm_replay.cc)\n";
    return 2;
  }
  try {
    auto pg = c10d::init(c10d::InitOptions{});  // env://, the default backend
    std::ifstream cases(std::string(argv[1]) + "/cases");
    size_t ran = 0;
    for (std::string line; std::getline(cases, line); ++ran) runCase(line, argv[1], pg);
    pg->barrier()->wait();
    if (pg->rank() == 0) std::cout << "sync_batch_norm_replay: " << ran << " cases\n";
    return ran > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sync_batch_norm_replay: " << e.what() << "\n";
    return 1;
  }
}
