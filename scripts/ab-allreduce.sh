#!/usr/bin/env bash
# Interleaved A/B of two builds' all_reduce_perf, with Open MPI's in the same rounds: on a noisy
# machine only runs taken in turn compare. Prints, per size, the median (and range) of the
# out-of-place time per op in us over the rounds.
#
# Usage: scripts/ab-allreduce.sh BIN_A BIN_B [NP] [ROUNDS] [MAX_BYTES]
#   BIN_A, BIN_B  bin directories holding c10drun and all_reduce_perf (e.g. build/bin and the
#                 bin of a worktree built at the base commit)
#   NP 2, ROUNDS 5, MAX_BYTES 1K (8 B up, doubling); -n ITERS -w WARMUP per run (environment;
#   default 20000 and 1000).
# Open MPI's run uses mpi_all_reduce_perf from BIN_A (skipped when it or mpirun is missing).
set -euo pipefail
A=${1:?BIN_A}
B=${2:?BIN_B}
NP=${3:-2}
ROUNDS=${4:-5}
MAX=${5:-1K}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
flags=(-b 8 -e "$MAX" -f 2 -n "${ITERS:-20000}" -w "${WARMUP:-1000}")
ours() {  # label bindir
  "$2/c10drun" --standalone --nproc-per-node "$NP" "$2/all_reduce_perf" "${flags[@]}" 2>&1 |
    awk -v v="$1" '/^\[rank0\]: +[0-9]/ {print v, $2, $7}' >>"$raw"
}
for _ in $(seq "$ROUNDS"); do
  ours A "$A"
  ours B "$B"
  if command -v mpirun >/dev/null && [ -x "$A/mpi_all_reduce_perf" ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np "$NP" \
      "$A/mpi_all_reduce_perf" "${flags[@]}" 2>&1 | awk '/^ +[0-9]/ {print "mpi", $1, $6}' >>"$raw"
  fi
done
python3 - "$raw" "$A" "$B" "$NP" "$ROUNDS" <<'PY'
import collections, statistics, sys
raw, a, b, np_, rounds = sys.argv[1:]
d = collections.defaultdict(list)
for line in open(raw):
    v, s, t = line.split()
    d[(v, int(s))].append(float(t))
print("# all_reduce_perf out of place, %s ranks, %s rounds, us: median [min-max]" % (np_, rounds))
print("# A = %s, B = %s" % (a, b))
print("%8s %20s %20s %20s" % ("bytes", "A", "B", "Open MPI"))
def cell(v, s):
    x = d.get((v, s))
    return "%.2f [%.2f-%.2f]" % (statistics.median(x), min(x), max(x)) if x else "-"
for s in sorted({s for _, s in d}):
    print("%8d %20s %20s %20s" % (s, cell("A", s), cell("B", s), cell("mpi", s)))
PY
