// Fault-injection suite, long version (label `stress`): every fault on every CPU backend it
// applies to, C10D_FAULT_INJECTIONS (default 20) random injections each, 2-8 ranks, the fault
// anywhere in the first 40 ops, up to 262144 elements per rank. Prints every injection and the
// fault x backend table (docs/testing.md "Fault injection"); fails on anything
// expectationFailures() reports. Seeds faultSeedBase("stress") + 0, 1, ... (new each run, or
// C10D_FAULT_SEED); each line printed names its seed.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/faults/fault_injection.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

uint64_t envOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(FaultsStress, RandomInjectionsOnEveryBackend) {
  const uint64_t base = faultSeedBase("stress");
  std::printf("%s\n", runSeedNote().c_str());
  const int n = static_cast<int>(envOr("C10D_FAULT_INJECTIONS", 20));
  const int maxWorld = static_cast<int>(envOr("C10D_FAULT_MAX_WORLD", 8));
  // C10D_FAULT_FILTER=<text>: only the injections whose description contains it
  // (e.g. "SIGKILL rank on gloo_cpu").
  const char* filter = std::getenv("C10D_FAULT_FILTER");
  FaultTable table;
  std::vector<std::string> failures;
  for (int f = 0; f < kNumFaults; ++f) {
    const Fault fault = static_cast<Fault>(f);
    for (const BackendParam& bp : conformanceBackends(maxWorld)) {
      if (!faultApplies(fault, bp)) continue;
      for (int i = 0; i < n; ++i) {
        const Injection inj =
            randomInjection(fault, bp, base + static_cast<uint64_t>(i), 2, maxWorld, 40, 262144);
        if (filter != nullptr && inj.describe().find(filter) == std::string::npos) continue;
        const InjectionResult r = runInjection(inj);
        table.add(r);
        const std::vector<std::string> bad = expectationFailures(r);
        std::printf("%s %s: %.1f s, %s\n", bad.empty() ? "ok  " : "FAIL", inj.describe().c_str(),
                    r.seconds, r.injectNote.c_str());
        for (const SurvivorReport& s : r.survivors) {
          std::printf("    rank %d: %s in %s after %.0f ms%s: %.400s\n", s.rank, s.outcome.c_str(),
                      s.opName.c_str(), s.latencyMs, s.namesVictim ? " (names the victim)" : "",
                      s.message.c_str());
        }
        for (const std::string& b : bad) {
          std::printf("    -> %s\n", b.c_str());
          failures.push_back(inj.describe() + ": " + b);
        }
        std::fflush(stdout);
      }
    }
  }
  std::printf("\nFault injection (%d per fault and backend, 2-%d ranks):\n%s", n, maxWorld,
              table.markdown().c_str());
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
