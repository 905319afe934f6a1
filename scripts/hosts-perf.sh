#!/usr/bin/env bash
# Measures verbs, gloo and Open MPI across two "hosts", side by side in one run: two network
# namespaces joined by a veth pair (scripts/netns-hosts.sh), NPROC ranks on each. Ranks of a host
# talk through shared memory (verbs: shm; Open MPI: vader), hosts through TCP over the veth.
#
#   scripts/hosts-perf.sh [BUILD_DIR] [NPROC] [JSON_DIR]
#
# perf/compare runs each op on verbs, gloo and Open MPI and prints one table per op: allreduce
# 8 B - 64 MiB (two runs: to 64 KiB with 200 iterations, from 256 KiB with 10), broadcast,
# allgather and reduce_scatter at 1 and 16 MiB (out of place; busbw ratios against verbs). Our
# backends start through a launcher that runs one c10drun per host (C10D_HOST_ID and the
# interface set per host). Open MPI starts through an mpirun wrapper in the first host whose
# rsh agent starts the second host's daemon in the other namespace. Each host gets its own
# hostname (a UTS namespace), so Open MPI sees two nodes: vader within one, `--mca btl
# tcp,vader,self`. JSON_DIR, if given, keeps each comparison as JSON.
#
# Needs root, iproute2, unshare (util-linux), Open MPI's mpirun and the build's mpi_*_perf
# binaries. Everything it makes is removed on exit, however it ends. Both hosts share this
# machine's CPUs: the numbers compare the libraries on one software network, not a real one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
nproc_per_host=${2:-2}
json_dir=${3:-}
[[ $(id -u) == 0 ]] || { echo "hosts-perf: needs root (network namespaces)" >&2; exit 77; }
for tool in mpirun unshare ip; do
  command -v $tool > /dev/null || { echo "hosts-perf: needs $tool" >&2; exit 77; }
done
[[ -x $build/bin/mpi_all_reduce_perf ]] ||
  { echo "hosts-perf: no $build/bin/mpi_all_reduce_perf (CMake builds it when it finds MPI)" >&2; exit 77; }

work=$(mktemp -d)
source "$here/netns-hosts.sh"
trap 'netns_hosts_down; rm -rf "$work"' EXIT
netns_hosts_up c10dp$$

# perf/compare's launcher: --standalone --nproc-per-node N PROGRAM ARGS -> N / 2 ranks per host.
cat > "$work/launch" <<LAUNCH
#!/usr/bin/env bash
set -u
[[ \$1 == --standalone && \$2 == --nproc-per-node ]] || { echo "launch: unexpected \$*" >&2; exit 2; }
per=\$((\$3 / 2)); shift 3
port=\$((29900 + RANDOM % 90))
pids=()
for h in 0 1; do
  ns=(${HOST_NS[*]}) addr=(${HOST_ADDR[*]}) ifs=(${HOST_IF[*]})
  ip netns exec \${ns[\$h]} env C10D_HOST_ID=host\$h C10D_TCP_IFADDR=\${addr[\$h]} \\
    C10D_SOCKET_IFNAME=\${ifs[\$h]} C10D_STORE_SECRET=hosts-perf \\
    "$build/bin/c10drun" --nnodes 2 --node-rank \$h --nproc-per-node \$per \\
    --master-addr ${HOST_ADDR[0]} --master-port \$port "\$@" &
  pids+=(\$!)
done
rc=0
for p in "\${pids[@]}"; do wait \$p || rc=\$?; done
exit \$rc
LAUNCH

# Open MPI's rsh agent: AGENT HOST COMMAND -> COMMAND in that host's namespace, named HOST.
cat > "$work/agent" <<AGENT
#!/usr/bin/env bash
case \$1 in
  ${HOST_ADDR[0]}) ns=${HOST_NS[0]} ;;
  ${HOST_ADDR[1]}) ns=${HOST_NS[1]} ;;
  *) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
host=\$1; shift
exec ip netns exec \$ns unshare --uts /bin/sh -c "hostname \$host && \$*"
AGENT

# perf/compare's mpirun: --oversubscribe -np N PROGRAM ARGS, started in the first host.
cat > "$work/mpirun" <<MPIRUN
#!/usr/bin/env bash
exec ip netns exec ${HOST_NS[0]} unshare --uts bash -c 'hostname "\$0" && exec "\$@"' \\
  ${HOST_ADDR[0]} "$(command -v mpirun)" --host ${HOST_ADDR[0]}:$nproc_per_host,${HOST_ADDR[1]}:$nproc_per_host \\
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,vader,self \\
  --mca btl_tcp_if_include 10.214.0.0/24 --mca oob_tcp_if_include 10.214.0.0/24 "\$@"
MPIRUN
chmod +x "$work/launch" "$work/agent" "$work/mpirun"

np=$((2 * nproc_per_host))
compare() {  # OP FLAGS...
  local op=$1
  shift
  local json=()
  [[ -n $json_dir ]] && json=(--json "$json_dir/hosts-$op-n$np.json")
  "$here/../perf/compare" --op "$op" --np $np --backends verbs,gloo --mpi \
    --bin-dir "$build/bin" --launcher "$work/launch" --mpirun "$work/mpirun" --timeout 900 \
    "${json[@]}" "$@"
}
[[ -z $json_dir ]] || mkdir -p "$json_dir"
echo "# hosts-perf: 2 hosts x $nproc_per_host ranks (veth between network namespaces), $(date -u +%F)"
status=0
# Small sizes take many iterations to be seen above the noise; large ones take seconds each.
compare all_reduce -b 8 -e 64K -f 8 -n 200 -w 20 -c 1 || status=1
compare all_reduce -b 256K -e 64M -f 4 -n 10 -w 3 -c 1 || status=1
compare broadcast -b 1M -e 16M -f 16 -n 10 -w 3 -c 1 || status=1
compare all_gather -b 1M -e 16M -f 16 -n 10 -w 3 -c 1 || status=1
compare reduce_scatter -b 1M -e 16M -f 16 -n 10 -w 3 -c 1 || status=1
exit $status
