#include "c10d/layers/common/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

namespace {

// A whole /proc file (they are small) into buf; false if unreadable.
bool readProc(const char* path, char* buf, size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t len = 0;
  while (len + 1 < size) {
    const ssize_t n = ::read(fd, buf + len, size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  ::close(fd);
  buf[len] = '\0';
  return len > 0;
}

// "VmRSS:\t  1234 kB" -> 1234 * 1024; -1 when the field is missing.
int64_t statusField(const char* status, const char* field) {
  const char* at = std::strstr(status, field);
  if (at == nullptr) return -1;
  return std::strtoll(at + std::strlen(field), nullptr, 10) * 1024;
}

}  // namespace

ProcessMemory processMemory() {
  char buf[4096];
  ProcessMemory m;
  if (!readProc("/proc/self/status", buf, sizeof(buf))) return m;
  m.rssBytes = statusField(buf, "\nVmRSS:");
  m.peakBytes = statusField(buf, "\nVmHWM:");
  return m;
}

int64_t currentRss() {
  char buf[256];
  if (!readProc("/proc/self/statm", buf, sizeof(buf))) return -1;
  long long size = 0;
  long long resident = 0;
  if (std::sscanf(buf, "%lld %lld", &size, &resident) != 2) return -1;
  return static_cast<int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

bool resetPeakRss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

void RssPhases::begin(const std::string& name) {
  if (open_) end();
  auto it =
      std::find_if(phases_.begin(), phases_.end(), [&](const Phase& p) { return p.name == name; });
  if (it == phases_.end()) {
    phases_.push_back(Phase{});
    phases_.back().name = name;
    it = phases_.end() - 1;
  }
  current_ = static_cast<size_t>(it - phases_.begin());
  // The first phase covers the process from its start: no reset before it.
  const bool fresh = it->samples == 0;
  const bool reset = (phases_.size() == 1 && fresh) || resetPeakRss();
  it->peakIsPhase = reset && (fresh || it->peakIsPhase);
  open_ = true;
  sample();
}

void RssPhases::sample() {
  if (!open_) return;
  Phase& p = phases_[current_];
  const int64_t rss = currentRss();
  p.sampledMaxBytes = std::max(p.sampledMaxBytes, rss);
  ++p.samples;
}

int64_t RssPhases::restartPeak() {
  if (!open_) return -1;
  Phase& p = phases_[current_];
  p.peakBytes = std::max(p.peakBytes, processMemory().peakBytes);
  if (!resetPeakRss()) return -1;
  const int64_t rss = currentRss();
  p.sampledMaxBytes = std::max(p.sampledMaxBytes, rss);
  ++p.samples;
  return rss;
}

void RssPhases::end() {
  if (!open_) return;
  Phase& p = phases_[current_];
  const ProcessMemory m = processMemory();
  p.peakBytes = std::max(p.peakBytes, m.peakBytes);
  p.lastBytes = m.rssBytes;
  p.sampledMaxBytes = std::max(p.sampledMaxBytes, m.rssBytes);
  open_ = false;
}

const RssPhases::Phase* RssPhases::find(const std::string& name) const {
  for (const Phase& p : phases_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int64_t RssPhases::processPeakBytes() const {
  int64_t peak = -1;
  for (const Phase& p : phases_) peak = std::max(peak, p.peakBytes);
  return peak;
}

std::string mib(int64_t bytes) {
  if (bytes < 0) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string describePhases(const RssPhases& phases) {
  std::string s;
  bool allPhase = true;
  for (const RssPhases::Phase& p : phases.phases()) {
    allPhase = allPhase && p.peakIsPhase;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%zu", p.samples);
    s += (s.empty() ? "" : "; ") + p.name + " peak " + mib(p.peakBytes) + " (RSS sampled " + buf +
         "x: max " + mib(p.sampledMaxBytes) + ", last " + mib(p.lastBytes) + ")";
  }
  s += "; process peak " + mib(phases.processPeakBytes()) +
       (allPhase ? " (VmHWM, reset per phase by /proc/self/clear_refs)"
                 : " (VmHWM; /proc/self/clear_refs refused: a phase's peak is since start)");
  return s;
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
