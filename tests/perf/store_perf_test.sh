#!/bin/sh
# store_perf's host limits (not timings): it raises its soft fd limit to the hard limit by itself;
# it refuses a run the hard limit cannot hold, saying what to do; it plans enough loopback source
# addresses that no address runs out of ephemeral ports, and refuses too few.
set -eu
BIN="$1"
T=$(mktemp -d /tmp/c10d-store-perf-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; cat "$T/out"; exit 1; }
command -v prlimit >/dev/null || { echo "prlimit missing: skipped"; exit 77; }

# 300 clients in 2 client processes: the server's process needs 364 descriptors, past a soft
# limit of 200: the run works only if store_perf raises it (to the hard limit, 4096).
prlimit --nofile=200:4096 "$BIN/store_perf" --clients 300 --ops 2 --procs 2 --threads 8 \
  --sources 3 > "$T/out" 2>&1 || fail "300 clients under a soft fd limit of 200 (hard 4096)"
grep -q '^# fd limit 4096 (hard 4096)' "$T/out" || fail "soft limit not raised to the hard one"
grep -Eq '^clients 300 rendezvous_ms [0-9]+ ops_per_s [0-9]+ server_rss_kib_per_client [0-9.]+$' \
  "$T/out" || fail "no result line"

# A hard limit of 200 cannot hold them: refused before anything starts, naming it and the fix.
if prlimit --nofile=200:200 "$BIN/store_perf" --clients 300 --ops 2 --procs 2 > "$T/out" 2>&1; then
  fail "ran 300 clients under a hard fd limit of 200"
fi
grep -q 'hard limit (ulimit -Hn) is 200' "$T/out" || fail "the refusal does not name the hard limit"
grep -q 'prlimit --nofile=N:N' "$T/out" || fail "the refusal does not say what to do"

# 100K clients: the plan spreads them over enough source addresses for the port range (checked
# before the fd limit, so this holds on any host), and one address is refused.
"$BIN/store_perf" --clients 100000 --procs 8 --threads 64 --plan > "$T/out" 2>&1 || true
if grep -q 'ip_local_port_range' "$T/out"; then fail "auto sources ran out of ports"; fi
# (read(1) in dash reads /proc files a byte at a time, which sysctl files do not support)
set -- $(cat /proc/sys/net/ipv4/ip_local_port_range)
lo=$1 hi=$2
need=$(( (100000 + (hi - lo + 1) * 9 / 10 - 1) / ((hi - lo + 1) * 9 / 10) ))
if grep -q '^plan: clients 100000' "$T/out"; then
  s=$(sed -n 's/^plan: clients 100000 .* sources \([0-9]*\)$/\1/p' "$T/out")
  [ "$s" -ge "$need" ] || fail "100000 clients planned on $s source addresses, need $need"
fi
if "$BIN/store_perf" --clients 100000 --procs 8 --sources 1 --plan > "$T/out" 2>&1; then
  fail "100000 clients from one source address were planned"
fi
grep -q "use --sources $need or more" "$T/out" || fail "the refusal does not say how many sources"
echo "store_perf_test: ok"
