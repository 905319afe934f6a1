// The start-up check the ZeRO layers share (ShardedOptimizer, FullyShardedModel): collective over
// the group, it compares every rank's parameters and settings before anyone throws, so a bad
// argument on one rank is the same InvalidArgument on every rank (naming the rank and the
// parameter) instead of a hang, and the group stays usable.
//
// Every rank allgathers its parameter count, its first locally invalid parameter (non-fp32 or
// non-CPU data, a grad that does not match its data, null data; grads are checked only when the
// layer reads them), a problem with its options, a fingerprint of its optimizer options and each
// agreed setting; then every numel.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/parameter.h"
#include "c10d/layers/optim/flat_optimizer.h"
#include "c10d/layers/zero/grad_norm.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace zero {

// A setting whose value every rank must share (the layer's collectives depend on it).
struct AgreedSetting {
  std::string name;  // "ZeroOptions::bucketCapBytes"
  int64_t value = 0;
  std::function<std::string(int64_t)> show;  // null: the number
};

struct StartUpCheck {
  const char* layer = "";  // message prefix: "ShardedOptimizer"
  const std::vector<layers::Parameter>* params = nullptr;
  bool checkGrads = true;  // the layer reads Parameter::grad (an empty Tensor(): none, allowed)
  bool checkData = true;   // false: null data is fine (the layer fills the values itself)
  const optim::OptimizerOptions* optimizer = nullptr;
  std::string optionsProblem;  // this rank's own invalid setting (empty: none)
  std::vector<AgreedSetting> settings;
  Milliseconds timeout = kUnsetTimeout;
};

// Adds the parameter groups and the gradient clip (which every rank must share: the clip is a
// collective, the groups decide the update) to check.settings, named "<prefix>::...".
void addSharedSettings(StartUpCheck& check, const std::vector<optim::ParamGroup>& groups,
                       const GradClip& clip, const std::string& prefix);

// Per parameter: the lr and weight decay it steps with (its group's, or the optimizer's); only
// the lr and weightDecay fields are meaningful.
std::vector<optim::Span> groupOfEach(const std::vector<optim::ParamGroup>& groups, size_t numParams,
                                     const optim::OptimizerOptions& optimizer);

// Collective; returns normally on every rank or throws InvalidArgument on every rank.
void verifyAcrossRanks(ProcessGroup& group, const StartUpCheck& check);

// Collective: every rank's `mine` (the same length on every rank), rank-major. Its buffers stay
// alive until the op completes, even if the wait times out.
std::vector<int64_t> allgatherInts(ProcessGroup& group, const std::vector<int64_t>& mine,
                                   Milliseconds timeout);

}  // namespace zero
C10D_NAMESPACE_END
}  // namespace c10d
