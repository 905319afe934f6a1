#!/usr/bin/env bash
# The CPU one collective costs across two "hosts" (the network namespaces of scripts/hosts-perf.sh,
# NPROC ranks each), per backend: the user and system CPU time of all ranks per op, with the
# start-up taken out (two runs of N1 and N2 iterations; each iteration is an out-of-place and an
# in-place op). Both "hosts" share this machine's cores, so the veth "network" is CPU too (the
# kernel's TCP copies show as system time): where the CPU of one op over the core count is near
# the op's time, the op is CPU-bound, and the backend that needs less CPU per op wins.
#
#   scripts/hosts-cpu.sh [BUILD_DIR] [NPROC] [OP] [SIZE] ['BACKEND [ENV=VAL...]'...]
#   scripts/hosts-cpu.sh build 2 all_gather 16M verbs gloo 'verbs C10D_ALGO=allgather:ring'
#
# Needs root and iproute2. Everything it makes is removed on exit, however it ends.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
nproc_per_host=${2:-2}
op=${3:-all_reduce}
size=${4:-64M}
shift $(($# > 4 ? 4 : $#))
configs=("$@")
[[ ${#configs[@]} -gt 0 ]] || configs=(verbs gloo)
n1=${N1:-2}  # iterations of the two runs (each iteration: an out-of-place and an in-place op)
n2=${N2:-12}
[[ $(id -u) == 0 ]] || { echo "hosts-cpu: needs root (network namespaces)" >&2; exit 77; }

source "$(dirname "$0")/netns-hosts.sh"
work=$(mktemp -d)
trap 'netns_hosts_down; rm -rf "$work"' EXIT
netns_hosts_up c10dc$$

# Seconds of `times`' "0m1.250s" form.
secs() { awk -v t="$1" 'BEGIN { split(t, a, /[ms]/); print a[1] * 60 + a[2] }'; }

# run BACKEND ITERS ENV...: prints "USER SYS TIME_US" (all ranks' CPU seconds; host 0's
# out-of-place time per op).
run() {
  local backend=$1 iters=$2 port=$((29500 + RANDOM % 90))
  shift 2
  for h in 0 1; do
    ip netns exec "${HOST_NS[$h]}" env "$@" C10D_HOST_ID=host$h \
      C10D_TCP_IFADDR="${HOST_ADDR[$h]}" C10D_SOCKET_IFNAME="${HOST_IF[$h]}" \
      C10D_STORE_SECRET=hosts-cpu bash -c '"$@" > "$0.out" 2>&1; s=$?; times > "$0.times"; exit $s' \
      "$work/h$h" timeout 600 "$build/bin/c10drun" --nnodes 2 --node-rank $h \
      --nproc-per-node "$nproc_per_host" --master-addr "${HOST_ADDR[0]}" --master-port $port \
      "$build/bin/${op}_perf" --backend "$backend" -b "$size" -e "$size" -n "$iters" -w 2 -c 0 &
  done
  local rc=0
  wait %1 || rc=$?
  wait %2 || rc=$?
  if [[ $rc != 0 ]]; then
    echo "hosts-cpu: $backend failed (exit $rc):" >&2
    cat "$work"/h*.out >&2
    exit 1
  fi
  local user=0 sys=0 u s
  for h in 0 1; do
    read -r u s < <(sed -n 2p "$work/h$h.times")
    user=$(awk -v a="$user" -v b="$(secs "$u")" 'BEGIN { print a + b }')
    sys=$(awk -v a="$sys" -v b="$(secs "$s")" 'BEGIN { print a + b }')
  done
  local t
  t=$(grep -E '^\[rank0\]: +[0-9]+ ' "$work/h0.out" | awk '{print $7}' | tail -1)
  echo "$user $sys $t"
}

ops=$((2 * (n2 - n1)))
echo "# $op $size, 2 hosts x $nproc_per_host ranks (veth), $(nproc) cores, $(date -u +%F);" \
  "CPU of all ranks per op, ms ($n2 - $n1 iterations, 2 ops each)"
printf '%-40s %10s %10s %10s %14s\n' backend user sys total 'time/op (us)'
for cfg in "${configs[@]}"; do
  read -r -a parts <<< "$cfg"
  backend=${parts[0]}
  env=("${parts[@]:1}")
  [[ ${#env[@]} -gt 0 ]] || env=(HOSTS_CPU=1)
  read -r u1 s1 _ < <(run "$backend" "$n1" "${env[@]}")
  read -r u2 s2 t < <(run "$backend" "$n2" "${env[@]}")
  awk -v c="$cfg" -v u1="$u1" -v s1="$s1" -v u2="$u2" -v s2="$s2" -v t="$t" -v n="$ops" 'BEGIN {
    u = (u2 - u1) * 1000 / n; s = (s2 - s1) * 1000 / n
    printf "%-40s %10.1f %10.1f %10.1f %14s\n", c, u, s, u + s, t }'
done
