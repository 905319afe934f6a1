// The process's own memory, as the kernel counts it (Linux /proc/self): resident set size now and
// its high-water mark. Unlike layers::layerMemory() (memory.h: the bytes the layers allocate
// through CountingAllocator), this sees everything the process holds: the framework's model and
// gradients, a backend's scratch copies, the allocator's slack, stray allocations. What "measured"
// means in train_mlp's and ddp_step_perf's memory lines.
//
//   processMemory()  VmRSS and VmHWM from /proc/self/status;
//   currentRss()     /proc/self/statm's resident pages (one short read: cheap enough to sample
//                    every step);
//   resetPeakRss()   writes "5" to /proc/self/clear_refs, which restarts VmHWM at the current RSS
//                    (Linux >= 4.0); false where that is not permitted (some containers), and then
//                    VmHWM stays the peak since the process started.
//
// RssPhases splits a run into named phases (start-up, training, evaluation...): each phase's peak
// is VmHWM read at its end after a reset at its start (kernel-exact, catching peaks between
// samples), and the RSS sampled by the caller within it (max, last). A phase entered again adds to
// its record. The process's peak is the largest phase peak (the first phase starts without a
// reset, so it covers the process from its start).
//
// Values are bytes; -1 where /proc is unreadable (not Linux). Threads: none; RssPhases is not
// thread-safe (one training thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

struct ProcessMemory {
  int64_t rssBytes = -1;   // VmRSS
  int64_t peakBytes = -1;  // VmHWM: the largest RSS since the process started or the last reset
};

ProcessMemory processMemory();
int64_t currentRss();
bool resetPeakRss();

class RssPhases {
 public:
  struct Phase {
    std::string name;
    int64_t peakBytes = -1;        // VmHWM over the phase (see peakIsPhase)
    bool peakIsPhase = false;      // false: the reset failed, peakBytes is since process start
    int64_t sampledMaxBytes = -1;  // the largest sampled RSS in the phase
    int64_t lastBytes = -1;        // RSS at the phase's (last) end
    size_t samples = 0;
  };

  // Ends the current phase (if any) and starts `name` (a new record, or the earlier one's).
  void begin(const std::string& name);
  // The RSS now, into the current phase.
  void sample();
  // Within the current phase, to measure a part of it (one step): folds the peak so far into the
  // phase's and restarts the kernel's peak. Returns the RSS now, or -1 if the reset was refused;
  // VmHWM (processMemory().peakBytes) minus it is then the part's rise.
  int64_t restartPeak();
  // Ends the current phase: its peak and last RSS.
  void end();
  const std::vector<Phase>& phases() const { return phases_; }
  std::vector<Phase>& phases() { return phases_; }  // e.g. to combine ranks' figures
  const Phase* find(const std::string& name) const;
  // The largest phase peak: the process's peak so far (as of the last end()).
  int64_t processPeakBytes() const;

 private:
  std::vector<Phase> phases_;
  size_t current_ = 0;
  bool open_ = false;
};

// "start-up peak 512.0 MiB; training peak 700.1 MiB (RSS sampled 90x: max 650.2, last 600.0 MiB);
// ...; process peak 700.1 MiB"
std::string describePhases(const RssPhases& phases);
std::string mib(int64_t bytes);  // "512.0 MiB", "n/a" for -1

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
