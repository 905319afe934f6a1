// train_mlp --trace FILE: every step's timeline in the Chrome trace format (the JSON that
// chrome://tracing and Perfetto read): per rank (a process in the viewer), one track with each
// layer's forward and backward compute, one with the steps, and each collective from launch to
// completion (the Reducer's bucket allreduces, ZeRO-2's reduces / rounds, ZeRO-3's unit gathers
// and reduce-scatters) on "communication" tracks: as many as were in flight at once, each
// collective on the first track free at its launch. Ranks on one host share the steady clock, so
// their tracks line up.
//
// Each rank writes its events to FILE.rank<r>; at the end rank 0 merges the parts it can read (the
// ranks on its host, or all of them on a shared filesystem) into FILE and removes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/comm_event.h"
#include "examples/train_mlp/model.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

class TraceWriter {
 public:
  TraceWriter(std::string path, int rank, int worldSize);
  void step(uint64_t step, int64_t beginNs, int64_t endNs,
            const std::vector<Mlp::LayerSpan>& layers, const std::vector<layers::CommEvent>& comm);
  // Collective when pg is set (a barrier): writes this rank's part; rank 0 merges. Throws Error
  // naming the file when one cannot be written.
  void finish(ProcessGroup* pg);

 private:
  void event(const std::string& name, const char* cat, int tid, int64_t beginNs, int64_t endNs,
             const std::string& args = "");

  std::string path_;
  int rank_;
  int worldSize_;
  void meta(const char* what, int tid, const std::string& name);
  int commTrack(int64_t beginNs, int64_t endNs);

  std::string events_;              // JSON objects, comma-separated
  std::vector<int64_t> laneEndNs_;  // per communication track: when its last collective ended
};

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
