// Prints DistributedSampler's indices for cases read from stdin, one case per line:
//   n replicas rank seed epoch shuffle(0/1) drop_last(0/1)
// -> one line of space-separated indices (empty for none). integrations/torch/tests/
// sampler_vs_torch.py compares them with torch.utils.data.distributed.DistributedSampler.
#include <cstdint>
#include <iostream>

#include "layers/data/distributed_sampler.h"

int main() {
  size_t n = 0;
  int replicas = 0, rank = 0, shuffle = 0, dropLast = 0;
  uint64_t seed = 0, epoch = 0;
  while (std::cin >> n >> replicas >> rank >> seed >> epoch >> shuffle >> dropLast) {
    c10d::data::DistributedSampler::Options o;
    o.shuffle = shuffle != 0;
    o.seed = seed;
    o.dropLast = dropLast != 0;
    c10d::data::DistributedSampler s(n, replicas, rank, o);
    s.setEpoch(epoch);
    const char* sep = "";
    for (size_t i : s.indices()) {
      std::cout << sep << i;
      sep = " ";
    }
    std::cout << '\n';
  }
  return std::cin.eof() ? 0 : 2;
}
