#!/bin/sh
# perf/compare and perf/plot end to end: compare runs all_reduce_perf twice (2 ranks under
# c10drun) and prints its table -- on gloo and verbs where gloo is built, else on verbs alone; plot
# turns a -J file into a PNG; scripts/ab-allreduce.sh runs one round; scripts/hosts-cpu.sh prints
# a row per backend (as root). Exit 77 (ctest: skipped) when matplotlib is missing.
set -eu
BIN="$1"; SRC="$2"
TMP=$(mktemp -d /tmp/c10d-perf-scripts.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# Open MPI's session directory goes under $TMPDIR: one of this test's own, since two mpiruns
# starting at once (ctest -j2) race to make the shared /tmp/ompi.<host>.<uid> and one fails.
export TMPDIR="$TMP"

[ -x "$BIN/c10drun" ] || { echo "c10drun not built in $BIN: skipped"; exit 77; }
# verbs is always built; gloo only where libgloo was found.
A=verbs
if "$BIN/all_reduce_perf" -b 64 -e 64 -n 1 --backend gloo > "$TMP/probe" 2>&1; then
  A=gloo
else
  echo "gloo backend unavailable: comparing verbs with itself"
fi

python3 "$SRC/perf/compare" --op all_reduce --np 2 --backends "$A,verbs" --bin-dir "$BIN" \
  -b 1K -e 4K -f 2 -n 2 --json "$TMP/cmp.json" > "$TMP/cmp.txt"
cat "$TMP/cmp.txt"
rows=$(grep -c '^ *[0-9]' "$TMP/cmp.txt")
[ "$rows" -eq 3 ] || { echo "expected 3 rows, got $rows"; exit 1; }
grep -q "verbs/$A" "$TMP/cmp.txt"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["rows"]) == 3, d' \
  "$TMP/cmp.json"

if [ -x "$BIN/mpi_all_reduce_perf" ] && command -v mpirun > /dev/null; then
  python3 "$SRC/perf/compare" --op all_reduce --np 2 --backends "$A" --mpi --bin-dir "$BIN" \
    -b 1K -e 4K -f 4 -n 2 > "$TMP/mpi.txt"
  cat "$TMP/mpi.txt"
  grep -q "mpi/$A" "$TMP/mpi.txt"
  [ "$(grep -c '^ *[0-9]' "$TMP/mpi.txt")" -eq 2 ] || { echo "expected 2 rows with --mpi"; exit 1; }
fi

# scripts/ab-allreduce.sh: one round of the build against itself, 8 and 16 B. Few iterations:
# at its default 21,000 per size the three runs took 300 s on a loaded 2-core machine.
ITERS=200 WARMUP=10 bash "$SRC/scripts/ab-allreduce.sh" "$BIN" "$BIN" 2 1 16 > "$TMP/ab.txt"
cat "$TMP/ab.txt"
[ "$(grep -c '^ *[0-9]' "$TMP/ab.txt")" -eq 2 ] || { echo "expected 2 rows from ab-allreduce"; exit 1; }
[ "$(awk '/^ *8 / {print NF}' "$TMP/ab.txt")" -ge 5 ] || { echo "ab-allreduce: A or B missing"; exit 1; }

# scripts/hosts-cpu.sh: a row of CPU figures per backend across two network namespaces (root).
if [ "$(id -u)" = 0 ] && command -v ip > /dev/null; then
  N1=1 N2=3 bash "$SRC/scripts/hosts-cpu.sh" "$BIN/.." 1 all_reduce 64K verbs "$A" > "$TMP/cpu.txt"
  cat "$TMP/cpu.txt"
  for b in verbs "$A"; do
    awk -v b="$b" '$1 == b && $5 + 0 > 0 { ok = 1 } END { exit !ok }' "$TMP/cpu.txt" ||
      { echo "hosts-cpu: no row with a time for $b"; exit 1; }
  done
fi

PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3  # Debian's, with python3-matplotlib
$PY -c 'import matplotlib' 2>/dev/null || { echo "no matplotlib: plot skipped"; exit 77; }
"$BIN/all_reduce_perf" -b 1K -e 16K -f 4 -n 2 -J "$TMP/run.json" > /dev/null
$PY "$SRC/perf/plot" -o "$TMP/out.png" "$TMP/run.json"
head -c 8 "$TMP/out.png" | od -An -c | grep -q 'P   N   G' || { echo "not a PNG"; exit 1; }
echo "scripts ok"
