#!/usr/bin/env bash
# Builds the Debian packages (cpack -G DEB: libc10d1, libc10d-dev, c10d-tools, python3-c10d-torch)
# for Debian 12 and 13 and installs each set into a fresh minimal chroot of its release, where an
# outside program is built against them with pkg-config and with find_package(c10d) and run on 2
# ranks under c10drun, and the torch plugin runs an allreduce on 2 ranks (root; debootstrap).
#
#   scripts/package-test.sh [--suite bookworm|trixie]... [--out DIR] [--no-test]
#
# Packages for the release this machine runs are built here (build-deb/); for the other one in a
# build chroot of that release, kept for the next run (packages built on Debian 12 do not install
# on 13: other sonames, e.g. libgloo). The install chroot is made afresh every run
# (debootstrap --variant=minbase, from a tarball kept after the first run) and removed after.
# Kept under C10D_DEB_DIR (default /var/tmp/c10d-deb): the debootstrap tarballs, downloaded
# .debs (apt's cache, per release), the build chroots with their ccache. The packages are copied
# to --out DIR/<suite>/ when given; --no-test only builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
suites=()
out=""
test=1
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suites+=("$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-test) test=0; shift ;;
    *) echo "package-test: unknown argument '$1' (usage: see the script's header)" >&2; exit 2 ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie)
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root (debootstrap, mount, chroot)" >&2; exit 2; }
top=${C10D_DEB_DIR:-/var/tmp/c10d-deb}
mkdir -p "$top"
host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
export DEBIAN_FRONTEND=noninteractive
if ! command -v debootstrap >/dev/null; then
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
t0=$SECONDS
stamp() { echo "package-test: $1 ($((SECONDS - t0)) s)"; }

# What building the packages needs (a subset of scripts/install-deps.sh: no test or fuzz deps).
build_deps=(build-essential cmake ninja-build pkg-config dpkg-dev file ccache
  libssl-dev libgloo-dev libibverbs-dev libboost-context-dev libcli11-dev nlohmann-json3-dev
  libhiredis-dev libcurl4-openssl-dev
  python3-torch libtorch-dev python3-dev pybind11-dev python3-setuptools)

# A minbase system of SUITE in DIR, from the kept debootstrap tarball.
make_system() {
  local suite=$1 dir=$2 tarball="$top/$1-minbase.tgz"
  if [ ! -s "$tarball" ]; then
    debootstrap --variant=minbase --make-tarball="$tarball.part" "$suite" "$top/tarball-$suite" \
      "$mirror" > "$top/$suite-tarball.log" 2>&1 || { tail -20 "$top/$suite-tarball.log" >&2; exit 1; }
    mv "$tarball.part" "$tarball"
    rm -rf "$top/tarball-$suite"
  fi
  debootstrap --variant=minbase --unpack-tarball="$tarball" "$suite" "$dir" "$mirror" \
    > "$dir.debootstrap.log" 2>&1 || { tail -20 "$dir.debootstrap.log" >&2; exit 1; }
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  # bookworm's minbase has no /etc/hosts: "localhost" would not resolve (c10drun's store).
  [ -e "$dir/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n' \
    > "$dir/etc/hosts"
  # Keep downloaded .debs (apt's cache is bind-mounted from $top, see in_chroot).
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' > "$dir/etc/apt/apt.conf.d/01keep-debs"
  # A throwaway system: dpkg need not fsync every file it unpacks (torch is thousands).
  echo force-unsafe-io > "$dir/etc/dpkg/dpkg.cfg.d/02unsafe-io"
}

# Runs COMMAND (a bash script) as root in DIR, in a mount namespace of its own (private
# propagation: /proc, /dev, /sys and the apt cache go when it ends, whatever its exit).
in_chroot() {
  local suite=$1 dir=$2 cmd=$3
  mkdir -p "$top/apt-$suite/partial"
  unshare --mount --propagation private -- /bin/bash -c '
    set -e
    dir=$1 cache=$2
    mount -t proc proc "$dir/proc"
    mount --rbind /sys "$dir/sys"
    mount --rbind /dev "$dir/dev"
    mount --bind "$cache" "$dir/var/cache/apt/archives"
    exec chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -ec "$3"' \
    in_chroot "$dir" "$top/apt-$suite" "$cmd"
}

# cmake + cpack in build dir BUILD of source SRC (run here or in a build chroot).
build_commands() {
  local srcdir=$1 build=$2
  cat <<EOF
mkdir -p $build
cmake -S $srcdir -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DC10D_BUILD_TESTS=OFF -DC10D_BUILD_EXAMPLES=OFF \
  -DC10D_WITH_NCCL=OFF -DC10D_PERF_WITH_CUDA=OFF \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache > $build/deb-configure.log
cmake --build $build -j 2 > $build/deb-build.log
rm -rf $build/packages
(cd $build && cpack -G DEB > $build/deb-cpack.log 2>&1)
ls $build/packages/*.deb
EOF
}

build_packages() {
  local suite=$1 debs=$2
  if [ "$suite" = "$host_suite" ]; then
    local missing=()
    for p in "${build_deps[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
    fi
    bash -ec "$(build_commands "$src" "$src/build-deb")" > /dev/null \
      || { tail -30 "$src"/build-deb/deb-*.log >&2; exit 1; }
    cp build-deb/packages/*.deb "$debs/"
  else
    # The build chroot is kept (its packages, build dir and ccache make the next run incremental).
    local dir="$top/build-$suite"
    if [ ! -x "$dir/usr/bin/cmake" ]; then
      rm -rf "$dir"
      make_system "$suite" "$dir"
      in_chroot "$suite" "$dir" "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${build_deps[*]} > /dev/null"
    fi
    mkdir -p "$dir/src/c10d"
    find "$dir/src/c10d" -mindepth 1 -maxdepth 1 ! -name 'build*' -exec rm -rf {} +
    git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir/src/c10d"
    in_chroot "$suite" "$dir" "export CCACHE_DIR=/var/cache/ccache-c10d; $(build_commands /src/c10d /src/c10d/build-deb)" \
      > /dev/null || { tail -30 "$dir"/src/c10d/build-deb/deb-*.log >&2; exit 1; }
    cp "$dir"/src/c10d/build-deb/packages/*.deb "$debs/"
  fi
}

# In the fresh chroot: install the packages, build the consumer both ways, run it on 2 ranks.
consumer_commands() {
  cat <<'EOF'
apt-get update -qq
cd /debs
apt-get install -y -qq --no-install-recommends ./*.deb g++ cmake make pkg-config > /tmp/apt.log \
  || { tail -30 /tmp/apt.log; exit 1; }
dpkg-query -W -f='${Package} ${Version} ${Status}\n' | grep c10d
cd /consumer
# 1. pkg-config: every flag from c10d.pc, none written here; the best backend available.
c++ -O1 main.cc -o consumer-pc $(pkg-config --cflags --libs c10d)
c10drun --standalone --nproc-per-node 2 ./consumer-pc
# 2. The CMake package; on gloo (Debian's libgloo, from libc10d1's Depends).
cmake -S . -B build > /tmp/cmake.log || { cat /tmp/cmake.log; exit 1; }
cmake --build build > /tmp/build.log || { cat /tmp/build.log; exit 1; }
c10drun --standalone --nproc-per-node 2 ./build/consumer gloo
# 3. The tools run from their installed places.
c10d_trace --help > /dev/null
c10drun --standalone --nproc-per-node 2 /usr/libexec/c10d/all_reduce_perf -b 8 -e 1K -f 4 -c 1 \
  > /tmp/perf.log || { cat /tmp/perf.log; exit 1; }
grep -q "Avg bus bandwidth" /tmp/perf.log
# 4. The torch plugin, where its package was built.
if dpkg-query -W python3-c10d-torch > /dev/null 2>&1; then
  # USE_LIBUV=0: Debian's torch 2.6 has no libuv, yet its env:// store asks for it (torch-plugin.md).
  USE_LIBUV=0 c10drun --standalone --nproc-per-node 2 python3 torch_allreduce.py
fi
echo "consumer: all checks passed"
EOF
}

for suite in "${suites[@]}"; do
  debs="$top/debs-$suite"
  rm -rf "$debs" && mkdir -p "$debs"
  build_packages "$suite" "$debs"
  stamp "$suite: built $(cd "$debs" && echo *.deb)"
  if [ -n "$out" ]; then mkdir -p "$out/$suite" && cp "$debs"/*.deb "$out/$suite/"; fi
  [ "$test" -eq 1 ] || continue

  dir="$top/test-$suite"
  if grep -qE " $dir(/| )" /proc/mounts; then
    echo "package-test: $dir still has mounts; unmount them (umount -R) first" >&2; exit 1
  fi
  rm -rf "$dir"
  make_system "$suite" "$dir"
  mkdir -p "$dir/debs" "$dir/consumer"
  cp "$debs"/*.deb "$dir/debs/"
  cp tests/package/consumer/* "$dir/consumer/"
  stamp "$suite: fresh chroot $dir"
  if ! in_chroot "$suite" "$dir" "$(consumer_commands)" 2>&1 | sed "s/^/[$suite] /"; then
    echo "package-test: $suite: the installed packages failed (chroot kept: $dir)" >&2; exit 1
  fi
  rm -rf "$dir" "$dir.debootstrap.log"
  stamp "$suite: packages installed and consumer passed"
done
stamp "done"
