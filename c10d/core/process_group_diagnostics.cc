// ProcessGroup's diagnostics: the GroupDiagnostics made on first use, stats, dumps, the failure
// hook backends call and the straggler summary at shutdown (group_diagnostics.h).
#include <cstdio>

#include "c10d/base/abi.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/core/process_group.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

GroupDiagnostics& ProcessGroup::diagnostics() const {
  if (GroupDiagnostics* d = diagPtr_.load(std::memory_order_acquire)) return *d;
  std::call_once(diagOnce_, [this] {
    diag_ = std::make_shared<GroupDiagnostics>(store_, diagInstance_, name(), backendName(), rank_,
                                               size_, diagConfig_);
    diagPtr_.store(diag_.get(), std::memory_order_release);
  });
  return *diag_;
}

OpStats ProcessGroup::stats() const {
  return diagnostics().recorder().stats();
}

void ProcessGroup::dumpFlightRecord(const std::string& path) const {
  diagnostics().dump(path, "on demand");
}

std::string ProcessGroup::stragglerReport(Milliseconds timeout) {
  return diagnostics().stragglerReport(timeout);
}

std::exception_ptr ProcessGroup::diagnoseFailure(std::exception_ptr error) {
  return diagnostics().onFailure(std::move(error));
}

void ProcessGroup::shutdownDiagnostics() {
  // A broken group's ranks may be gone: no summary (it would wait for them).
  if (diagShutdown_.exchange(true) || !diagConfig_.stragglerReport || brokenError()) return;
  const std::string text = stragglerReport();
  if (!text.empty()) std::fprintf(stderr, "%s", text.c_str());
}

C10D_NAMESPACE_END
}  // namespace c10d
