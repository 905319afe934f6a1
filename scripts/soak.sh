#!/usr/bin/env bash
# The default suite RUNS times back to back (default 5), as test.sh runs it (-j2, without the
# stress and sweep labels), beside HOGS busy processes (default 1) that keep a core loaded: the
# check that the suite's timing margins hold on a loaded 2-core machine. Needs a built build/
# (scripts/build.sh). Prints each run's result (its log in build/soak/ has the output of the tests
# that failed) and, at the end, every test that failed in any run with the runs it failed in;
# exit status 1 if any did. Extra args go to ctest.
#   scripts/soak.sh            # 5 runs, 1 hog
#   RUNS=3 HOGS=2 scripts/soak.sh -R 'Reducer|Zero'
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
hogs=${HOGS:-1}
out=build/soak
rm -rf "$out" && mkdir -p "$out"
pids=()
for ((h = 0; h < hogs; ++h)); do
  (while :; do :; done) &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "soak: $runs runs of the default suite beside $hogs busy process(es), logs in $out/"
for ((r = 1; r <= runs; ++r)); do
  start=$(date +%s)
  ctest --test-dir build --no-tests=error --output-on-failure -j 2 -LE 'stress|sweep|package' "$@" \
    > "$out/run$r.log" 2>&1
  rc=$?
  summary=$(grep -E 'tests passed|tests failed' "$out/run$r.log" | tail -1)
  echo "soak: run $r: exit $rc in $(($(date +%s) - start)) s: ${summary:-no summary}"
  grep -E '^\s+[0-9]+ - .* \((Failed|Timeout|Exception|SEGFAULT|Not Run)\)' "$out/run$r.log" |
    sed -E "s/^\s+[0-9]+ - //; s/ +#.*\(/ (/; s/$/ run $r/" >> "$out/failures.txt"
done
if [ -s "$out/failures.txt" ]; then
  echo "soak: failures (test, kind, run):"
  sort "$out/failures.txt"
  exit 1
fi
echo "soak: every run passed"
