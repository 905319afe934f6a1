#!/usr/bin/env bash
# The test suite: install what is missing, build into build/, run every test with ctest.
# Long runs are labelled and excluded here: "stress" (soak), "sweep" (the full large-count
# conformance sweep) and "package" (the Debian packages in fresh chroots); run them with:
# ctest --test-dir build -L 'stress|sweep|package'.
# Results also go to build/ctest-junit.xml. In CI (CI=true), scripts/check-components.py then
# fails the run if a component in .ci/components was not built or its tests skipped, or if any
# test skipped that the list does not expect on these machines.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
junit="$PWD/build/ctest-junit.xml"
rm -f "$junit"  # never check a previous run's results
ctest=(ctest --test-dir build --output-on-failure --no-tests=error -j "${CTEST_JOBS:-2}"
       -LE 'stress|sweep|package' --output-junit "$junit" "$@")
[ "${CI:-}" = true ] || exec "${ctest[@]}"
rc=0
"${ctest[@]}" || rc=$?
python3 scripts/check-components.py build || { [ "$rc" -ne 0 ] || rc=1; }
exit "$rc"
