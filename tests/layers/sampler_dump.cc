// Prints DistributedSampler's indices for cases read from stdin, one case per line:
//   n replicas rank seed epoch shuffle(0/1) drop_last(0/1)
// -> one line of space-separated indices (empty for none). integrations/torch/tests/
// sampler_vs_torch.py compares them with torch.utils.data.distributed.DistributedSampler.
//
// --binary: per case, the count and then the indices, each a native-endian uint64, with no
// separators (sampler_large_vs_torch.py: hundreds of millions of indices, which text would make
// gigabytes). --randperm 1.13|2.6: which torch's randperm to follow (Options::randperm; 2.6).
#include <cstdint>
#include <cstring>
#include <iostream>
#include <vector>

#include "c10d/layers/data/distributed_sampler.h"

static_assert(sizeof(size_t) == sizeof(uint64_t), "--binary writes size_t as uint64");

int main(int argc, char** argv) {
  bool binary = false;
  auto randperm = c10d::data::Randperm::kTorch2_6;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--binary") == 0) {
      binary = true;
    } else if (std::strcmp(argv[i], "--randperm") == 0 && i + 1 < argc &&
               (std::strcmp(argv[i + 1], "1.13") == 0 || std::strcmp(argv[i + 1], "2.6") == 0)) {
      randperm = std::strcmp(argv[++i], "1.13") == 0 ? c10d::data::Randperm::kTorch1_13
                                                     : c10d::data::Randperm::kTorch2_6;
    } else {
      std::cerr << "sampler_dump: bad argument '" << argv[i]
                << "' (usage: [--binary] [--randperm 1.13|2.6])\n";
      return 2;
    }
  }
  size_t n = 0;
  int replicas = 0, rank = 0, shuffle = 0, dropLast = 0;
  uint64_t seed = 0, epoch = 0;
  while (std::cin >> n >> replicas >> rank >> seed >> epoch >> shuffle >> dropLast) {
    c10d::data::DistributedSampler::Options o;
    o.shuffle = shuffle != 0;
    o.seed = seed;
    o.dropLast = dropLast != 0;
    o.randperm = randperm;
    c10d::data::DistributedSampler s(n, replicas, rank, o);
    s.setEpoch(epoch);
    const std::vector<size_t> mine = s.indices();
    if (binary) {
      const uint64_t count = mine.size();
      std::cout.write(reinterpret_cast<const char*>(&count), sizeof(count));
      std::cout.write(reinterpret_cast<const char*>(mine.data()),
                      static_cast<std::streamsize>(mine.size() * sizeof(size_t)));
      std::cout.flush();
      continue;
    }
    const char* sep = "";
    for (size_t i : mine) {
      std::cout << sep << i;
      sep = " ";
    }
    std::cout << '\n';
  }
  return std::cin.eof() && std::cout ? 0 : 2;
}
