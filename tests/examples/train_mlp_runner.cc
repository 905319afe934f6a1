#include "tests/examples/train_mlp_runner.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

namespace {

double parseDouble(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw std::runtime_error("cannot parse " + what + ": " + text);
  return v;
}

}  // namespace

double Training::lossAt(uint64_t step) const {
  auto it = loss.find(step);
  if (it == loss.end()) throw std::runtime_error("no loss logged at step " + std::to_string(step));
  return parseDouble(it->second, "the loss of step " + std::to_string(step));
}

double Training::finalLossValue() const {
  return parseDouble(finalLoss, "the final loss");
}

std::string Training::line(const std::string& needle) const {
  for (const std::string& l : rank0) {
    if (l.find(needle) != std::string::npos) return l;
  }
  return "";
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Training runTraining(int nproc, const std::vector<std::string>& args,
                     const std::vector<std::string>& launcherArgs) {
  std::vector<std::string> argv = {"--nproc-per-node", std::to_string(nproc)};
  argv = concat(argv, launcherArgs);
  argv.push_back(TRAIN_MLP_PATH);
  argv = concat(argv, args);
  // The tests train the small model (22k parameters, milliseconds a step) unless they name a width;
  // train_mlp's default is a demonstration-size model (12.7M parameters).
  if (std::find(args.begin(), args.end(), "--hidden") == args.end()) {
    argv = concat(argv, {"--hidden", "128", "--layers", "3"});
  }
  LauncherHooks hooks;
  hooks.timeout = std::chrono::milliseconds(90000);  // a few seconds normally; sanitizers, load
  Training t;
  t.run = runLauncher(argv, hooks);
  for (const std::string& full : splitLines(t.run.out)) {
    int rank = -1;
    std::string l;
    if (!parsePrefixed(full, &rank, &l) || rank != 0) continue;
    t.rank0.push_back(l);
    const std::string step = "step ", lossWord = " loss ";
    if (l.compare(0, step.size(), step) == 0) {
      const size_t at = l.find(lossWord);
      if (at == std::string::npos) continue;
      const uint64_t k = std::strtoull(l.c_str() + step.size(), nullptr, 10);
      const size_t begin = at + lossWord.size();
      t.loss[k] = l.substr(begin, l.find(' ', begin) - begin);
    } else if (l.compare(0, 11, "final loss ") == 0) {
      t.finalLoss = l.substr(11);
    } else if (l.compare(0, 13, "final params ") == 0) {
      t.finalParams = l.substr(13);
    }
  }
  return t;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
