#!/usr/bin/env bash
# Store rendezvous scaling, side by side: starts etcd and redis-server on free loopback ports
# (data in a mkdtemp dir on tmpfs), runs build/bin/store_perf against the TCPStore, Redis and etcd,
# then kills both servers and removes the dir, however it exits. store_perf raises its own fd limit
# and says what to change when the host's limits (hard fd limit, ports, pid_max) are too low.
#   CLIENTS=256,1024,4096 STORES="tcp redis etcd" PROCS=4 OPS=10 TMO=300 scripts/store-perf.sh
# THREADS (client threads per process, default 256) and SOURCES (loopback addresses: TCPStore's
# sources, default one per 4,096 clients; Redis's destinations, default 8) are passed on when set.
set -u
cd "$(dirname "$0")/.."
B=${BIN:-build/bin}
root=/dev/shm; [ -w "$root" ] || root=${TMPDIR:-/tmp}
D=$(mktemp -d "$root/c10d-store-perf.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT
freeport() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
EP=$(freeport); PP=$(freeport); RP=$(freeport)
etcd --name perf --data-dir "$D/etcd" \
  --listen-client-urls "http://127.0.0.1:$EP" --advertise-client-urls "http://127.0.0.1:$EP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "perf=http://127.0.0.1:$PP" --log-level error >"$D/etcd.log" 2>&1 &
pids+=($!)
# Redis listens on 127.0.0.1-8 so that its clients can spread over them (--sources 8 below): its
# client library picks no source address, and the kernel's ephemeral-port search for one
# source/destination pair slows connect() past ~10K connections.
redis-server --port "$RP" --bind $(seq -f 127.0.0.%g 1 8) --save "" --appendonly no --dir "$D" \
  --maxclients 20000 --tcp-backlog 4096 >"$D/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s "http://127.0.0.1:$EP/health" | grep -q true && redis-cli -p "$RP" ping >/dev/null 2>&1 &&
    break
  sleep 0.1
done
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for s in ${STORES:-tcp redis etcd}; do
  case $s in
    tcp) url=tcp ;;
    etcd) url="etcd://127.0.0.1:$EP/perf" ;;
    redis) url="redis://127.0.0.1:$RP/perf" ;;
    *) echo "unknown store $s" >&2; exit 2 ;;
  esac
  echo "== $s"
  src=${SOURCES:-}
  [ "$s" = redis ] && src=${SOURCES:-8}
  timeout "${TMO:-300}" "$B/store_perf" --store "$url" --clients "${CLIENTS:-256,1024,4096}" \
    --ops "${OPS:-10}" --procs "${PROCS:-4}" --timeout 240 ${THREADS:+--threads "$THREADS"} \
    ${src:+--sources "$src"} || echo "($s: exit $?)"
done
