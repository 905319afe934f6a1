// The buffers a collective reads or writes, kept alive until it completes even if the layer that
// owns them drops them first (destroyed with communication in flight, after a failure), and
// released by the layer as soon as it has waited for the collective: not when the backend gets
// round to destroying its completion callbacks, which may be after wait() returns and would make
// the layers' measured memory (memory.h) depend on thread timing.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/work.h"
#include "c10d/layers/common/memory.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

class KeepAlive {
 public:
  KeepAlive() = default;
  // Holds `buffers` until `work` completes or release(), whichever is later for the buffers the
  // caller still holds and earlier for the ones it dropped.
  KeepAlive(Work& work, std::vector<std::shared_ptr<Floats>> buffers)
      : held_(std::make_shared<std::vector<std::shared_ptr<Floats>>>(std::move(buffers))) {
    auto held = held_;
    work.then([held](Work&) {});  // the callback's copy keeps `held` alive, not its contents
  }
  // Call once the collective completed (wait() returned): drops the buffers now.
  void release() {
    if (held_) held_->clear();
    held_.reset();
  }

 private:
  std::shared_ptr<std::vector<std::shared_ptr<Floats>>> held_;
};

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
