#!/bin/sh
# init() (env://) and a perf binary under Open MPI's mpirun, 3 ranks on this host: the ranks come
# from OMPI_COMM_WORLD_* (c10d/base/launch_env.h), rank 0's store from 127.0.0.1 and MASTER_PORT.
# Usage: mpirun_test.sh BIN_DIR. Exit 77 (skipped) when mpirun is absent.
set -eu
BIN=$1
command -v mpirun > /dev/null || { echo "mpirun not found (apt-get install openmpi-bin): skipped"; exit 77; }
TMP=$(mktemp -d /tmp/c10d-mpirun-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# Open MPI's session directory goes under $TMPDIR: one of this test's own, since two mpiruns
# starting at once (ctest -j2) race to make the shared /tmp/ompi.<host>.<uid> and one fails.
export TMPDIR="$TMP"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# No torchrun variables may leak in: they would win over Open MPI's.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR 2>/dev/null || true
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 3 -x MASTER_PORT"

# 1. A small init() program: 5 allreduce steps checked against world size 3.
MASTER_PORT=$(free_port) timeout 60 $MPIRUN "$BIN/elastic_test_worker" train 5 "$TMP" 0 > "$TMP/init.txt" 2>&1 \
  || { cat "$TMP/init.txt"; echo "init() under mpirun failed"; exit 1; }
cat "$TMP/init.txt"
for r in 0 1 2; do
  grep -q "^ready round ? rank $r world 3$" "$TMP/init.txt" || { echo "rank $r missing"; exit 1; }
done
[ "$(grep -c '^finished world 3$' "$TMP/init.txt")" -eq 3 ] || { echo "not every rank finished"; exit 1; }
[ "$(tail -n 1 "$TMP/log")" = "step 5 world 3 round ?" ] || { cat "$TMP/log"; echo "bad step log"; exit 1; }

# 2. A perf binary: nccl-tests' table, every value checked (-c 1), launcher named.
MASTER_PORT=$(free_port) timeout 60 $MPIRUN "$BIN/all_reduce_perf" -b 8 -e 1K -f 4 -n 2 -c 1 \
  > "$TMP/perf.txt" 2>&1 || { cat "$TMP/perf.txt"; echo "all_reduce_perf under mpirun failed"; exit 1; }
cat "$TMP/perf.txt"
grep -q "world size 3 launcher mpirun" "$TMP/perf.txt" || { echo "launcher not mpirun"; exit 1; }
[ "$(grep -c '^#  Rank  [0-2] ' "$TMP/perf.txt")" -eq 3 ] || { echo "expected 3 rank lines"; exit 1; }
grep -q "Out of bounds values : 0 OK" "$TMP/perf.txt" || { echo "wrong values"; exit 1; }
echo "mpirun ok"
