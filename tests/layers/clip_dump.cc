// Prints zero::clipGradNorm's result for cases read from stdin, one per line: "g max_norm" (any
// strtod form, hex floats included) -> "g_after" as a hex float, clipping the one-element fp32
// gradient g on a one-rank group. integrations/torch/tests/clip_vs_torch.py compares it with
// torch.nn.utils.clip_grad_norm_.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "c10d/bootstrap/init.h"
#include "c10d/layers/zero/grad_norm.h"

int main() {
  const std::string path = "/tmp/c10d-clip-dump-" + std::to_string(getpid());
  c10d::InitOptions io;
  io.initMethod = "file://" + path + "?rank=0&world_size=1";
  auto pg = c10d::init(io);
  std::string g, maxNorm;
  while (std::cin >> g >> maxNorm) {
    float v = std::strtof(g.c_str(), nullptr);
    c10d::zero::clipGradNorm(*pg, &v, 1, {std::strtod(maxNorm.c_str(), nullptr), 2.0},
                             c10d::kUnsetTimeout);
    std::printf("%a\n", static_cast<double>(v));
  }
  pg.reset();
  ::unlink(path.c_str());
  return std::cin.eof() ? 0 : 2;
}
