// What the layers that run collectives over parameters (the DDP Reducer, the ZeRO sharded
// optimizer) share about failures: how a parameter is named in messages, the latch that makes a
// layer unusable once a collective failed part way, and which rank a disagreement is blamed on.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/layers/common/parameter.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

// "parameter 3 ('fc.bias')"; "parameter 3" when it has no name or is out of range.
std::string describeParameter(const std::vector<Parameter>& params, size_t index);

// A gradient a framework hands a layer for parameter `index` (markReady(index, grad)) must have
// the parameter's numel, dtype and device, and data unless it is empty: else InvalidArgument
// "<who>: the gradient given for parameter 1 ('p1') is 5 elements of float on cpu; the parameter
// has 4 elements of float on cpu (group <group>)". `index` must be in range.
void checkGivenGradient(const char* who, const std::vector<Parameter>& params, size_t index,
                        const Tensor& grad, const std::string& group);

// After a collective failed part way, a layer's buffers are in an unknown state: the first
// failure is latched and every later call refuses, naming it. Not synchronized: the owner's lock
// guards it.
class FailureLatch {
 public:
  explicit FailureLatch(const char* layer) : layer_(layer) {}

  // Throws Error "<layer> (group <group>) is unusable after an earlier failure: <first>" once a
  // failure is latched.
  void check(const std::string& group) const;
  // Latches "<what>: <error's message>" unless a failure is latched already; rethrows `error`.
  [[noreturn]] void fail(const std::string& what, std::exception_ptr error);

 private:
  const char* layer_;
  std::string first_;  // empty: no failure
};

// The value most ranks hold (ties: the lowest rank's) in *reference, and the first rank holding
// another (-1 when all agree); `value(r)` is rank r's. Both layers blame a disagreement the same
// way, so their messages name the same rank.
template <typename V>
int firstDissenter(int size, const V& value, int* reference) {
  int best = 0;
  int bestCount = 0;
  for (int r = 0; r < size; ++r) {
    int count = 0;
    for (int q = 0; q < size; ++q) count += value(q) == value(r) ? 1 : 0;
    if (count > bestCount) best = r, bestCount = count;
  }
  *reference = best;
  for (int r = 0; r < size; ++r) {
    if (!(value(r) == value(best))) return r;
  }
  return -1;
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
