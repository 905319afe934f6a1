#!/usr/bin/env bash
# Runs a command on this tree inside a Debian chroot (root; debootstrap): how CI proves the
# other supported Debian release, and how to try one by hand.
#
#   scripts/chroot.sh [--suite trixie] [--dir DIR] [--fresh] [--remove] -- COMMAND...
#   scripts/chroot.sh -- scripts/test.sh          # the README's test command on Debian 13
#
# DIR (default /var/tmp/c10d-SUITE) is made with `debootstrap --variant=minbase SUITE` when it
# does not hold a system yet, and reused (packages, build dirs) when it does. --fresh: wipe DIR
# first; --remove: delete DIR after the command (CI does both: nothing is reused between runs).
# The tree's files (tracked and untracked-but-not-ignored: what a clean clone plus your edits
# holds, no build dirs) are copied to DIR/src/c10d (its build dirs are kept), and COMMAND runs there as root with CI passed
# through. /proc, /sys, /dev (with /dev/shm, the shm transport's) and a fresh /run (ip netns keeps
# its namespaces there) are mounted in a mount namespace of the command's own, gone with it.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=trixie
dir=""
fresh=0
remove=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --remove) remove=1; shift ;;
    --) shift; break ;;
    *) echo "chroot.sh: unknown argument '$1' (usage: see the script's header)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "chroot.sh: no command given (chroot.sh [options] -- COMMAND...)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "chroot.sh: needs root (debootstrap, mount, chroot)" >&2; exit 2; }
dir="${dir:-/var/tmp/c10d-$suite}"

if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
if [ "$fresh" -eq 1 ] && [ -e "$dir" ]; then
  # A mount left by a killed earlier run would be wiped through: refuse instead.
  if grep -qE " $dir(/| )" /proc/mounts; then
    echo "chroot.sh: $dir still has mounts; unmount them (umount -R) first" >&2; exit 1
  fi
  rm -rf "$dir"
fi
if [ ! -x "$dir/usr/bin/apt-get" ]; then
  echo "chroot.sh: debootstrap $suite into $dir"
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  debootstrap --variant=minbase "$suite" "$dir" "${mirror:-http://deb.debian.org/debian}" \
    > "$dir.debootstrap.log" 2>&1 || { tail -20 "$dir.debootstrap.log" >&2; exit 1; }
fi
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
# debootstrap's bookworm minbase has no /etc/hosts (trixie's has), which every installed system
# has: without it "localhost" does not resolve and the netns hosts cannot bind their own over it.
[ -e "$dir/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
  > "$dir/etc/hosts"

cleanup() {
  if [ "$remove" -eq 1 ]; then
    # Never delete through a mount that is still there (/dev is the host's).
    if grep -qE " $dir(/| )" /proc/mounts; then
      echo "chroot.sh: $dir still has mounts; not removed" >&2
    else
      rm -rf "$dir" "$dir.debootstrap.log"
    fi
  fi
}
trap cleanup EXIT

# A fresh copy of the tree; build dirs made by earlier runs in a kept DIR stay (incremental).
mkdir -p "$dir/src/c10d"
find "$dir/src/c10d" -mindepth 1 -maxdepth 1 ! -name 'build*' -exec rm -rf {} +
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir/src/c10d"

# The mounts live in a mount namespace of the command's own (private propagation), so they go
# when it ends, whatever its exit. DIR becomes that namespace's root (pivot_root, not only a
# chroot): the netns tests' hosts enter their own mount namespaces with setns, which puts a
# process at its namespace's root, and that must be Debian 13's, not this machine's.
quoted=$(printf '%q ' "$@")
mkdir -p "$dir/.host"
unshare --mount --propagation private -- /bin/bash -c '
  set -e
  dir=$1; shift
  mount --bind "$dir" "$dir"
  mount -t proc proc "$dir/proc"
  mount --rbind /sys "$dir/sys"
  mount --rbind /dev "$dir/dev"
  mount -t tmpfs tmpfs "$dir/run"
  cd "$dir"
  pivot_root . .host
  umount -l /.host
  exec chroot / "$@"' chroot.sh "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI="${CI:-}" \
  C10D_FUZZ_SECONDS="${C10D_FUZZ_SECONDS:-}" CTEST_JOBS="${CTEST_JOBS:-}" \
  /bin/bash -c "cd /src/c10d && $quoted"
