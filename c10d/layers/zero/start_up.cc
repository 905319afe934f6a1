#include "c10d/layers/zero/start_up.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/layers/common/failure.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

namespace {

// What a rank found wrong with its own arguments, shared through the start-up allgather.
enum Problem : int64_t {
  kNone = 0,
  kBadOptions,    // the optimizer's or the layer's own
  kNotFloat32,    // detail: the dtype
  kNotCpu,        // detail: the device type
  kNullData,      // detail: numel
  kGradMismatch,  // detail: the grad's numel
  kGradDtype,     // detail: the grad's dtype
  kGradNotCpu,
  kNullGrad,
};

struct LocalProblem {
  Problem kind = kNone;
  int64_t index = -1;  // parameter, or -1 for the options
  int64_t detail = 0;
  std::string text;  // this rank's full message
};

// A 63-bit fingerprint of the optimizer's options (the fields its algorithm reads).
int64_t fingerprint(const optim::OptimizerOptions& o) {
  Fnv1a h(kFnv1aShortBasis);
  const int algorithm = static_cast<int>(o.algorithm);
  h.add(&algorithm, sizeof(algorithm));
  h.add(&o.lr, sizeof(double));
  h.add(&o.weightDecay, sizeof(double));
  if (o.algorithm == optim::Algorithm::kSgd) {
    h.add(&o.momentum, sizeof(double));
    h.add(&o.dampening, sizeof(double));
    const int nesterov = o.nesterov ? 1 : 0;
    h.add(&nesterov, sizeof(nesterov));
  } else {
    h.add(&o.beta1, sizeof(double));
    h.add(&o.beta2, sizeof(double));
    h.add(&o.eps, sizeof(double));
  }
  return static_cast<int64_t>(h.value() >> 1);
}

LocalProblem findLocalProblem(const StartUpCheck& c) {
  LocalProblem local;
  auto found = [&local](Problem kind, int64_t index, int64_t detail, std::string text) {
    if (local.kind != kNone) return;
    local = LocalProblem{kind, index, detail, std::move(text)};
  };
  try {
    c.optimizer->validate();
  } catch (const InvalidArgument& e) {
    found(kBadOptions, -1, 0, e.what());
  }
  if (!c.optionsProblem.empty()) found(kBadOptions, -1, 0, c.optionsProblem);
  const std::vector<layers::Parameter>& params = *c.params;
  auto describe = [&](size_t i) { return layers::describeParameter(params, i); };
  for (size_t i = 0; i < params.size() && local.kind == kNone; ++i) {
    const layers::Parameter& p = params[i];
    const auto idx = static_cast<int64_t>(i);
    if (p.data.dtype != DataType::kFloat32) {
      found(kNotFloat32, idx, static_cast<int64_t>(p.data.dtype),
            detail::str(describe(i), " is ", toString(p.data.dtype), ": ", c.layer,
                        " supports fp32 parameters only (no mixed-precision master weights)"));
    } else if (!p.data.device.isCPU()) {
      found(kNotCpu, idx, 0,
            detail::str(describe(i), " is on ", toString(p.data.device), ": ", c.layer,
                        " supports CPU parameters only"));
    } else if (c.checkData && p.data.data == nullptr && p.data.numel > 0) {
      found(kNullData, idx, static_cast<int64_t>(p.data.numel),
            detail::str(describe(i), " has null data and ", p.data.numel, " elements"));
    } else if (!c.checkGrads || (p.grad.data == nullptr && p.grad.numel == 0)) {
      continue;  // no grad tensor: the layer is given each gradient (ShardedOptimizer::markReady)
    } else if (p.grad.numel != p.data.numel) {
      found(kGradMismatch, idx, static_cast<int64_t>(p.grad.numel),
            detail::str(describe(i), "'s grad has ", p.grad.numel, " elements, its data ",
                        p.data.numel));
    } else if (p.grad.dtype != DataType::kFloat32) {
      found(kGradDtype, idx, static_cast<int64_t>(p.grad.dtype),
            detail::str(describe(i), "'s grad is ", toString(p.grad.dtype), ", its data float32"));
    } else if (!p.grad.device.isCPU()) {
      found(kGradNotCpu, idx, 0,
            detail::str(describe(i), "'s grad is on ", toString(p.grad.device), ": ", c.layer,
                        " supports CPU parameters only"));
    } else if (p.grad.data == nullptr && p.grad.numel > 0) {
      found(kNullGrad, idx, 0, detail::str(describe(i), " has a null grad"));
    }
  }
  return local;
}

// Another rank's problem, from the allgathered fields only.
std::string describeRemote(Problem kind, int64_t index, int64_t det) {
  switch (kind) {
    case kBadOptions:
      return "invalid options";
    case kNotFloat32:
      return detail::str("parameter ", index, " is ", toString(static_cast<DataType>(det)),
                         " (fp32 only)");
    case kNotCpu:
      return detail::str("parameter ", index, " is not on the CPU");
    case kNullData:
      return detail::str("parameter ", index, " has null data and ", det, " elements");
    case kGradMismatch:
      return detail::str("parameter ", index, "'s grad has ", det, " elements, not its data's");
    case kGradDtype:
      return detail::str("parameter ", index, "'s grad is ", toString(static_cast<DataType>(det)),
                         ", not float32");
    case kGradNotCpu:
      return detail::str("parameter ", index, "'s grad is not on the CPU");
    case kNullGrad:
      return detail::str("parameter ", index, " has a null grad");
    case kNone:
      break;
  }
  return "?";
}

int64_t bitsOf(double v) {
  int64_t b = 0;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

std::string doubleOf(int64_t b) {
  double v = 0;
  std::memcpy(&v, &b, sizeof(v));
  return detail::str(v);
}

}  // namespace

void addSharedSettings(StartUpCheck& check, const std::vector<optim::ParamGroup>& groups,
                       const GradClip& clip, const std::string& prefix) {
  check.settings.push_back({prefix + "::paramGroups", optim::fingerprint(groups),
                            [](int64_t) { return std::string("other groups"); }});
  check.settings.push_back({prefix + "::clip.maxNorm", bitsOf(clip.maxNorm), doubleOf});
  check.settings.push_back({prefix + "::clip.normType", bitsOf(clip.normType), doubleOf});
}

std::vector<optim::Span> groupOfEach(const std::vector<optim::ParamGroup>& groups, size_t numParams,
                                     const optim::OptimizerOptions& optimizer) {
  std::vector<optim::Span> each(numParams, optim::Span{0, 0, optimizer.lr, optimizer.weightDecay});
  for (const optim::ParamGroup& g : groups) {
    for (size_t p : g.params) {
      if (p < numParams) each[p] = optim::Span{0, 0, g.lr, g.weightDecay};
    }
  }
  return each;
}

std::vector<int64_t> allgatherInts(ProcessGroup& group, const std::vector<int64_t>& mine,
                                   Milliseconds timeout) {
  const size_t n = mine.size();
  auto in = std::make_shared<std::vector<int64_t>>(mine);
  auto out = std::make_shared<std::vector<int64_t>>(n * static_cast<size_t>(group.size()), 0);
  auto work =
      group.allgatherIntoTensor(tensorOf(out->data(), out->size()),
                                tensorOf(in->data(), in->size()), AllgatherOptions{timeout});
  work->then([in, out](Work&) {});  // alive until the op completes, even if we time out
  work->wait(timeout);              // its errors name the op, sequence number and group
  return *out;
}

void verifyAcrossRanks(ProcessGroup& group, const StartUpCheck& c) {
  const std::string g = " (group " + group.name() + ")";
  const std::vector<layers::Parameter>& params = *c.params;
  const int size = group.size();
  // 1. What is wrong on this rank, without throwing yet.
  const LocalProblem local = findLocalProblem(c);

  // 2. Share counts, problems and settings; every rank judges the same table.
  const int64_t np = static_cast<int64_t>(params.size());
  std::vector<int64_t> mine = {np, local.kind, local.index, local.detail,
                               fingerprint(*c.optimizer)};
  const size_t fixed = mine.size();
  for (const AgreedSetting& s : c.settings) mine.push_back(s.value);
  const size_t fields = mine.size();
  const std::vector<int64_t> all = allgatherInts(group, mine, c.timeout);
  auto field = [&](int r, size_t f) { return all[static_cast<size_t>(r) * fields + f]; };

  // A rank with a problem of its own reports it in full; the others report the first rank's.
  if (local.kind != kNone) {
    C10D_THROW(InvalidArgument, c.layer, ": rank ", group.rank(), ": ", local.text, g);
  }
  for (int r = 0; r < size; ++r) {
    const auto kind = static_cast<Problem>(field(r, 1));
    if (kind == kNone) continue;
    C10D_THROW(InvalidArgument, c.layer, ": rank ", r,
               " rejected its arguments: ", describeRemote(kind, field(r, 2), field(r, 3)),
               " (see rank ", r, "'s error for details)", g);
  }

  int ref = 0;
  int bad = layers::firstDissenter(
      size, [&](int r) { return field(r, 0); }, &ref);
  if (bad >= 0) {
    const int64_t first = std::min(field(bad, 0), field(ref, 0));
    C10D_THROW(InvalidArgument, c.layer, ": the model differs across ranks", g, ": rank ", bad,
               " has ", field(bad, 0), " parameters, rank ", ref, " has ", field(ref, 0),
               "; parameter ", first,
               first < np ? " (" + layers::describeParameter(params, first) + " here)" : "",
               " exists on only one of them");
  }
  for (size_t k = 0; k < c.settings.size(); ++k) {
    bad = layers::firstDissenter(
        size, [&](int r) { return field(r, fixed + k); }, &ref);
    if (bad < 0) continue;
    const AgreedSetting& s = c.settings[k];
    auto show = [&](int r) {
      const int64_t v = field(r, fixed + k);
      return s.show ? s.show(v) : std::to_string(v);
    };
    C10D_THROW(InvalidArgument, c.layer, ": ", s.name, " differs across ranks", g, ": rank ", bad,
               " has ", show(bad), ", rank ", ref, " has ", show(ref),
               " (the collectives would not match)");
  }
  bad = layers::firstDissenter(
      size, [&](int r) { return field(r, 4); }, &ref);
  if (bad >= 0) {
    C10D_THROW(InvalidArgument, c.layer, ": the optimizer options differ across ranks", g,
               ": rank ", bad, "'s differ from rank ", ref,
               "'s (this rank: ", c.optimizer->describe(),
               "); every rank must step with the same options");
  }

  // 3. Same counts: compare every numel (dtypes are all fp32 by now).
  if (params.empty()) return;
  std::vector<int64_t> numelsHere;
  for (const layers::Parameter& p : params)
    numelsHere.push_back(static_cast<int64_t>(p.data.numel));
  const std::vector<int64_t> numels = allgatherInts(group, numelsHere, c.timeout);
  const size_t n = params.size();
  for (size_t k = 0; k < n; ++k) {
    auto numelOf = [&](int r) { return numels[static_cast<size_t>(r) * n + k]; };
    bad = layers::firstDissenter(size, numelOf, &ref);
    if (bad < 0) continue;
    C10D_THROW(InvalidArgument, c.layer, ": ", layers::describeParameter(params, k),
               " differs across ranks", g, ": rank ", bad, " has ", numelOf(bad),
               " elements, rank ", ref, " has ", numelOf(ref),
               " elements (name as on this rank; every rank must pass the same parameters, in "
               "the same order, with the same shapes)");
  }
}

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
