// train_mlp: the data-parallel layers' proof, a small MLP trained on synthetic data in one process
// or on the ranks c10drun starts. See examples/README.md, options.cc (--help) and trainer.h.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "c10d/bootstrap/init.h"
#include "examples/train_mlp/options.h"
#include "examples/train_mlp/trainer.h"

int main(int argc, char** argv) {
  c10d::example::ParseResult parsed = c10d::example::parseOptions(argc, argv);
  if (!parsed.run) return parsed.exitCode;
  try {
    c10d::example::runTraining(parsed.options);
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    const char* rank = std::getenv("RANK");
    std::fprintf(stderr, "train_mlp: error%s%s: %s\n", rank ? " on rank " : "", rank ? rank : "",
                 e.what());
    return 1;
  }
}
