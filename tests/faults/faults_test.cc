// Fault-injection suite, quick version (default suite): every fault on every CPU backend it
// applies to, a few random injections each (2-3 ranks, the fault within the first ops), checked
// against what the runtime guarantees (fault_injection.h, expectationFailures()). The table of
// every injection is printed at the end. The long version is faults_stress_test.cc.
//
// Each run draws new seeds (faultSeedBase). Replay one injection: C10D_FAULT_SEED=<seed>
// C10D_FAULT_INJECTIONS=1 with --gtest_filter on its fault and backend (each line printed names
// the seed).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/faults/fault_injection.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

FaultTable& table() {
  static FaultTable t;
  return t;
}

class PrintTable : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("\nFault injection (quick):\n%s", table().markdown().c_str());
  }
};

uint64_t envOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

using Param = std::tuple<Fault, BackendParam>;

std::vector<Param> cases() {
  std::vector<Param> out;
  for (int f = 0; f < kNumFaults; ++f)
    for (const BackendParam& bp : conformanceBackends(3))
      if (faultApplies(static_cast<Fault>(f), bp)) out.emplace_back(static_cast<Fault>(f), bp);
  return out;
}

std::string caseName(const Param& p) {
  std::string f = faultName(std::get<0>(p));
  for (char& c : f)
    if (c == ' ') c = '_';
  return f + "_" + std::get<1>(p).label();
}

class FaultsQuick : public ::testing::TestWithParam<Param> {};

TEST_P(FaultsQuick, ErrorsNamedInTimeNoHangNoLeak) {
  const auto [fault, bp] = GetParam();
  // A different draw per case (collectives, sizes, victims) and per run; printed, replayable.
  const uint64_t base = faultSeedBase(caseName(GetParam()));
  std::printf("%s\n", runSeedNote().c_str());
  const int n = static_cast<int>(envOr("C10D_FAULT_INJECTIONS", 2));
  for (int i = 0; i < n; ++i) {
    Injection inj = randomInjection(fault, bp, base + static_cast<uint64_t>(i), 2, 3, 6, 4096);
    inj.opTimeout = Milliseconds(1500);
    const InjectionResult r = runInjection(inj);
    table().add(r);
    std::printf("%s: %.1f s, %s\n", inj.describe().c_str(), r.seconds, r.injectNote.c_str());
    for (const SurvivorReport& s : r.survivors) {
      std::printf("  rank %d: %s in %s after %.0f ms (fds %d -> %d): %.300s\n", s.rank,
                  s.outcome.c_str(), s.opName.c_str(), s.latencyMs, s.fdsBefore, s.fdsAfter,
                  s.message.c_str());
    }
    for (const std::string& f : expectationFailures(r))
      ADD_FAILURE() << inj.describe() << ": " << f << " (replay: C10D_FAULT_SEED=" << inj.seed
                    << " C10D_FAULT_INJECTIONS=1)";
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultsQuick, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return caseName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FaultsQuick);

[[maybe_unused]] const auto* const kPrinter = ::testing::AddGlobalTestEnvironment(new PrintTable);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
