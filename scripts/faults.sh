#!/usr/bin/env bash
# Runs the long fault-injection suite (tests/faults/faults_stress_test, label `stress`) from
# build/ and prints every injection and the fault x backend table (docs/testing.md "Fault injection").
# Knobs: C10D_FAULT_INJECTIONS (20 per fault and backend), C10D_FAULT_SEED (1: the first seed),
# C10D_FAULT_MAX_WORLD (8). Extra args go to the test binary (e.g. --gtest_repeat=2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target faults_stress_test >/dev/null
exec build/bin/faults_stress_test "$@"
