#!/usr/bin/env bash
# Installs the Debian 12 / 13 packages c10d needs to build, test and benchmark (root; apt-get).
# Installs only what is missing, so a second run costs nothing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libssl-dev                                   # TCPStore authentication (libcrypto: HMAC, RAND)
  libgtest-dev libgmock-dev libbenchmark-dev   # tests, micro-benchmarks
  libgloo-dev                                  # gloo backend
  libibverbs-dev                               # verbs backend's ibverbs transport (compile only)
  libboost-context-dev                         # verbs engine fibers off x86-64 (fcontext)
  libcli11-dev nlohmann-json3-dev              # tools: c10drun, perf binaries
  openmpi-bin libopenmpi-dev                   # perf/compare --mpi baselines (mpi_<op>_perf)
  python3 python3-matplotlib                   # perf/plot
  python3-torch libtorch-dev python3-dev pybind11-dev  # integrations/torch (the c10d_torch plugin)
  python3-setuptools                           # torch 2.x (Debian 13) imports it
  abigail-tools                                # scripts/abi-check.py: the C ABI against abi/libc10d.abi
  iproute2                                     # the netns tests' virtual hosts (ip netns, veth)
  clang-format
  clang libclang-rt-dev                        # the fuzz build (libFuzzer; scripts/fuzz.sh)
  libhiredis-dev                               # c10d_store_redis
  etcd-server redis-server                     # the servers the etcd / Redis store tests start
)
# c10d_store_etcd needs a libcurl -dev package; any flavour will do (they conflict with each other).
if ! dpkg-query -W -f='${Status}\n' 'libcurl4-*-dev' 2>/dev/null | grep -q "install ok installed"; then
  packages+=(libcurl4-openssl-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The tests start their own etcd / redis-server on free loopback ports; the system services the
# packages enable (where systemd runs) are not needed: stop and disable the ones we just installed.
if [ -d /run/systemd/system ]; then
  for svc in etcd redis-server; do
    pkg=$svc; [ "$svc" = etcd ] && pkg=etcd-server
    if [[ " ${missing[*]} " == *" $pkg "* ]]; then
      $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    fi
  done
fi
echo "install-deps: done"
