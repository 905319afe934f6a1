#!/usr/bin/env bash
# A fuzzing campaign: builds the libFuzzer targets into build-fuzz (clang, ASan, UBSan; as
# scripts/fuzz.sh does, plus the gloo backend, which c10d_api's groups may pick), runs each
# target (every one, or those named) for RUNS executions from its corpus (the archive
# tests/fuzz/corpus/<target>_seed_corpus.zip, unpacked by scripts/fuzz-corpus.py) and its
# regressions (tests/fuzz/regress/<target>/), then keeps what it found in the tree:
#  - the corpus: the archive is written anew with its seeds (seed-*) and the inputs that add
#    coverage to them and to the regressions, minimized by libFuzzer's -merge=1 over the old corpus
#    and everything the run found (the same inputs give the same archive, byte for byte);
#  - every crash, timeout, leak or out-of-memory input, as tests/fuzz/regress/<target>/regress-<sha1>
#    (a plain file, not in the archive), so that the default suite's replay
#    (fuzz_replay_<target>) runs it from then on.
# It prints one line per target: executions, exec/s, coverage (libFuzzer's cov: edges and ft:
# features of the whole corpus, before and after), corpus files before and after, and the inputs
# kept as regressions (corpus files count the regressions too). Exit status 1 when a target
# crashed (see its log), else 0. A failed merge leaves the archive as it was.
#
# Usage: scripts/fuzz-campaign.sh [TARGET...]     (TARGET: etcd_reply, not etcd_reply_fuzzer)
# Environment:
#   RUNS     executions per target, over all jobs (default 10000000)
#   JOBS     fuzzing processes per target (default 2: this machine has 2 cores)
#   TIMEOUT  seconds one input may take before it counts as a hang (default 30)
#   RSS_MB   memory limit of a fuzzing process, MB (default 2048)
#   NICE     nice level of the build and the fuzzers (default 10: other work goes first)
#   FUZZ_ARGS  more libFuzzer flags (e.g. "-max_len=8192 -dict=...")
# A run's logs, unpacked corpus, scratch corpus and artifacts stay in build-fuzz/campaign/<target>/;
# the scratch corpus is reused by the next campaign of the target.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10000000}
JOBS=${JOBS:-2}
TIMEOUT=${TIMEOUT:-30}
RSS_MB=${RSS_MB:-2048}
NICE=${NICE:-10}
FUZZ_ARGS=${FUZZ_ARGS:-}

CC=clang CXX=clang++ nice -n "$NICE" cmake -S . -B build-fuzz -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DC10D_FUZZ=ON -DC10D_BUILD_TESTS=OFF \
  -DC10D_BUILD_TOOLS=OFF -DC10D_WITH_GLOO=AUTO -DC10D_FUZZ_WHOLE_LIBRARY=ON >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  nice -n "$NICE" cmake --build build-fuzz --target c10d_fuzzers -j "$(nproc)"
  for bin in build-fuzz/bin/*_fuzzer; do
    t=$(basename "$bin")
    targets+=("${t%_fuzzer}")
  done
else
  nice -n "$NICE" cmake --build build-fuzz -j "$(nproc)" \
    --target "${targets[@]/%/_fuzzer}"
fi

# cov: and ft: of libFuzzer's INITED line for a corpus (no fuzzing).
coverage() {
  local bin=$1
  shift
  "$bin" -runs=0 -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" "$@" 2>&1 |
    sed -n 's/.*INITED.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' | tail -1
  echo "? ?"  # when it crashed on the corpus (a regression not fixed yet): the caller reads one line
}

count() { find "$@" -maxdepth 1 -type f | wc -l; }

summary=()
crashed=0
for t in "${targets[@]}"; do
  bin=$PWD/build-fuzz/bin/${t}_fuzzer
  zip=$PWD/tests/fuzz/corpus/${t}_seed_corpus.zip
  regress=$PWD/tests/fuzz/regress/$t
  work=$PWD/build-fuzz/campaign/$t
  if [ ! -x "$bin" ] || [ ! -f "$zip" ]; then
    echo "fuzz-campaign: no target $t (no $bin or no $zip)" >&2
    exit 2
  fi
  rm -rf "$work/artifacts" "$work/merged" "$work"/fuzz-*.log
  mkdir -p "$work/scratch" "$work/artifacts" "$work/merged"
  python3 scripts/fuzz-corpus.py unpack "$zip" "$work/corpus" >/dev/null
  # The inputs it starts from: the corpus, and the regressions (a directory only once there are).
  inputs=("$work/corpus")
  [ ! -d "$regress" ] || inputs+=("$regress")
  files_before=$(count "${inputs[@]}")
  read -r cov_before ft_before < <(coverage "$bin" "${inputs[@]}")
  echo "== $t: $RUNS runs in $JOBS jobs (logs: $work/fuzz-*.log)"

  # Each job runs its share; new inputs go to the scratch corpus, the others are only read.
  per_job=$(((RUNS + JOBS - 1) / JOBS))
  # shellcheck disable=SC2086
  (cd "$work" && nice -n "$NICE" "$bin" -jobs="$JOBS" -workers="$JOBS" -runs="$per_job" \
    -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" $FUZZ_ARGS "$work/scratch" "${inputs[@]}" >/dev/null 2>&1) || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work"/fuzz-*.log |
    awk '{s += $1} END {print s + 0}')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work"/fuzz-*.log |
    awk '{s += $1} END {print s + 0}')

  # Crashes, hangs, leaks, out-of-memory: kept as regressions (libFuzzer names them by SHA-1).
  kept=0
  for a in "$work"/artifacts/{crash,timeout,oom,leak}-*; do
    [ -f "$a" ] || continue
    sha=$(sha1sum "$a" | cut -c1-40)
    mkdir -p "$regress"
    cp "$a" "$regress/regress-$sha"
    kept=$((kept + 1))
  done
  [ "$kept" -eq 0 ] || crashed=1
  inputs=("$work/corpus")
  [ ! -d "$regress" ] || inputs+=("$regress")

  # The new corpus: the seeds, plus what adds coverage to them and the regressions (minimized);
  # the regressions are left out of the archive afterwards (they stay plain files).
  find "$work/corpus" -maxdepth 1 -type f -name 'seed-*' -exec cp {} "$work/merged/" \;
  [ ! -d "$regress" ] || find "$regress" -maxdepth 1 -type f -exec cp {} "$work/merged/" \;
  if nice -n "$NICE" "$bin" -merge=1 -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -artifact_prefix="$work/artifacts/" "$work/merged" "$work/corpus" "$work/scratch" \
    >"$work/merge.log" 2>&1; then
    find "$work/merged" -maxdepth 1 -type f -name 'regress-*' -delete
    python3 scripts/fuzz-corpus.py pack "$work/merged" "$zip" >/dev/null
    python3 scripts/fuzz-corpus.py unpack "$zip" "$work/corpus" >/dev/null
  else
    echo "fuzz-campaign: $t: merge failed (see $work/merge.log); $zip left as it was" >&2
  fi
  files_after=$(count "${inputs[@]}")
  read -r cov_after ft_after < <(coverage "$bin" "${inputs[@]}")

  line=$(printf '%-22s %12s %9s  cov %5s -> %-5s  ft %6s -> %-6s  files %4s -> %-4s  regress +%s' \
    "$t" "$execs" "$rate" "$cov_before" "$cov_after" "$ft_before" "$ft_after" \
    "$files_before" "$files_after" "$kept")
  echo "$line"
  summary+=("$line")
done

echo
printf '%-22s %12s %9s  %s\n' target executions exec/s "coverage (whole corpus), corpus files"
printf '%s\n' "${summary[@]}"
exit "$crashed"
