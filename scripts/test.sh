#!/usr/bin/env bash
# The test suite: install what is missing, build into build/, run every test with ctest.
# Long runs are labelled and excluded here: "stress" (soak) and "sweep" (the full large-count
# conformance sweep); run them with: ctest --test-dir build -L 'stress|sweep'.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec ctest --test-dir build --output-on-failure --no-tests=error -j "${CTEST_JOBS:-2}" \
  -LE 'stress|sweep' "$@"
