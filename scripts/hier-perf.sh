#!/usr/bin/env bash
# Measures the verbs allreduce across two "hosts": two network namespaces joined by a veth pair
# (10.214.0.1, 10.214.0.2), one c10drun per host with NPROC ranks each (C10D_HOST_ID tells the
# ranks of a host apart from the other's), all_reduce_perf run once with the default
# (hierarchical) algorithm and once with each flat one forced, printed side by side.
#
#   scripts/hier-perf.sh [BUILD_DIR] [NPROC] [all_reduce_perf args...]
#
# Needs root and iproute2. Everything it makes is removed on exit, however it ends.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
nproc_per_host=${2:-2}
shift $(($# > 2 ? 2 : $#))
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(-b 64K -e 64M -f 4 -n 10 -w 3 -c 1)
[[ $(id -u) == 0 ]] || { echo "hier-perf: needs root (network namespaces)" >&2; exit 77; }

source "$(dirname "$0")/netns-hosts.sh"
trap netns_hosts_down EXIT
netns_hosts_up c10dh$$

run() {  # ALGO_SPEC: one job, both hosts; prints host 0's table
  local algo=$1 port=$((29600 + RANDOM % 300))
  local out=$(mktemp)
  for h in 0 1; do
    local ns=${HOST_NS[$h]} addr=${HOST_ADDR[$h]}
    ip netns exec $ns env C10D_HOST_ID=host$h C10D_TCP_IFADDR=$addr C10D_ALGO="$algo" \
      C10D_STORE_SECRET=hier-perf \
      timeout 600 "$build/bin/c10drun" --nnodes 2 --node-rank $h --nproc-per-node "$nproc_per_host" \
      --master-addr 10.214.0.1 --master-port $port \
      "$build/bin/all_reduce_perf" --backend verbs "${args[@]}" > "$out.$h" 2>&1 &
  done
  wait
  grep -E '^\[rank0\]: +[0-9]+ ' "$out.0" | sed 's/^\[rank0\]: //' | awk '{print $1, $6, $8}'
  rm -f "$out" "$out.0" "$out.1"
}

echo "# 2 hosts x $nproc_per_host ranks over a veth pair; out-of-place time (us) and busbw (GB/s)"
hier=$(run "")
ring=$(run allreduce:ring)
rd=$(run allreduce:recursive_doubling)
rab=$(run allreduce:rabenseifner)
printf "%12s  %22s  %22s  %22s  %22s\n" bytes "hierarchical" "ring" "recursive_doubling" \
  "rabenseifner"
paste <(echo "$hier") <(echo "$ring") <(echo "$rd") <(echo "$rab") |
  awk '{printf "%12s  %12s %9s  %12s %9s  %12s %9s  %12s %9s\n", $1, $2, $3, $5, $6, $8, $9, $11, $12}'
