# Sourced by the cross-host benchmarks: two "hosts", network namespaces ${tag}a and ${tag}b joined
# by a veth pair (${tag}x = 10.214.0.1, ${tag}y = 10.214.0.2). `netns_hosts_up TAG` makes them and
# sets HOST_NS, HOST_ADDR and HOST_IF (arrays, index = host); the caller's EXIT trap should call
# `netns_hosts_down`, which removes them however the script ends. Needs root and iproute2.
netns_hosts_up() {
  NETNS_TAG=$1
  HOST_NS=("${NETNS_TAG}a" "${NETNS_TAG}b")
  HOST_ADDR=(10.214.0.1 10.214.0.2)
  HOST_IF=("${NETNS_TAG}x" "${NETNS_TAG}y")
  ip netns add "${HOST_NS[0]}"
  ip netns add "${HOST_NS[1]}"
  ip link add "${HOST_IF[0]}" netns "${HOST_NS[0]}" type veth peer name "${HOST_IF[1]}" \
    netns "${HOST_NS[1]}"
  for h in 0 1; do
    ip -n "${HOST_NS[$h]}" addr add "${HOST_ADDR[$h]}/24" dev "${HOST_IF[$h]}"
    ip -n "${HOST_NS[$h]}" link set lo up
    ip -n "${HOST_NS[$h]}" link set "${HOST_IF[$h]}" up
  done
}

netns_hosts_down() {
  [[ -n ${NETNS_TAG:-} ]] || return 0
  ip netns del "${NETNS_TAG}a" 2>/dev/null || true
  ip netns del "${NETNS_TAG}b" 2>/dev/null || true
}
