// When a layer's collectives ran, for timelines (train_mlp --trace writes them as a Chrome trace):
// each collective's launch and completion on the steady clock (FlightRecorder::nowNs), in ns.
// Off unless the layer's options ask for it, so that a step formats no names and adds no
// completion callbacks by default.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

struct CommEvent {
  std::string name;  // "allreduce bucket 2", "allgather unit 1", ...
  size_t bytes = 0;  // this rank's payload
  int64_t launchNs = 0;
  int64_t doneNs = 0;  // completion, as the Work's callback saw it
};

// The events of one step. stamp() before issuing a collective, launched() after: it records the
// launch and has the Work's completion callback stamp the completion; take() returns them (a
// completion whose callback has not run yet, which may happen just after wait() returns, is
// stamped with the time of take()). Not synchronized beyond the completion stamps: the owner's
// lock guards it.
class CommEventLog {
 public:
  void enable(bool on) { enabled_ = on; }
  int64_t stamp() const { return enabled_ ? FlightRecorder::nowNs() : 0; }
  // Names the event "<what> <index>".
  void launched(const char* what, size_t index, size_t bytes, int64_t launchNs, Work& work) {
    if (!enabled_) return;
    auto done = std::make_shared<std::atomic<int64_t>>(0);
    events_.push_back(
        {CommEvent{std::string(what) + " " + std::to_string(index), bytes, launchNs, 0}, done});
    work.then([done](Work&) { done->store(FlightRecorder::nowNs(), std::memory_order_release); });
  }
  std::vector<CommEvent> take() {
    std::vector<CommEvent> out;
    if (events_.empty()) return out;
    out.reserve(events_.size());
    const int64_t now = FlightRecorder::nowNs();
    for (auto& [event, done] : events_) {
      const int64_t d = done->load(std::memory_order_acquire);
      event.doneNs = d != 0 ? d : now;
      out.push_back(std::move(event));
    }
    events_.clear();
    return out;
  }

 private:
  bool enabled_ = false;
  std::vector<std::pair<CommEvent, std::shared_ptr<std::atomic<int64_t>>>> events_;
};

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
