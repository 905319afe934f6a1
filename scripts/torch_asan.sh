#!/usr/bin/env bash
# Runs the torch plugin's tests (ctest label "torch") against an ASan+UBSan build of libc10d.
#
#   scripts/torch_asan.sh BUILD_DIR ASAN_BUILD_DIR [ctest args...]
#
# BUILD_DIR: a normal build with the plugin (build/python/c10d_torch.*.so) and c10drun.
# ASAN_BUILD_DIR: a build configured -DC10D_SANITIZE=address,undefined; only its libc10d is used
#   (cmake --build ASAN_BUILD_DIR --target c10d).
# Debian's python and torch are not instrumented, so the sanitizer runtimes are preloaded into every
# process of the run (ctest, c10drun and the Python ranks); the plugin loads the sanitized libc10d
# (its DT_NEEDED libc10d.so.<ABI>) through LD_LIBRARY_PATH, which comes before the RUNPATH. Leak detection is off: CPython and
# torch keep their allocations to exit. Any ASan or UBSan report fails the test that made it.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
asan_build=$(cd "$2" && pwd)
shift 2

# The library the build's libc10d.so link names (older SONAMEs may linger in the directory).
lib=$(readlink -f "$asan_build/lib/libc10d.so" 2>/dev/null || true)
# (grep reads all of nm's output: with -q, nm could die of SIGPIPE and pipefail fail the test)
if [[ -z "$lib" || ! -f "$lib" ]] || ! nm -D "$lib" | grep __asan_init >/dev/null; then
  echo "torch_asan: no ASan-instrumented libc10d in $asan_build/lib (configure it with" \
       "-DC10D_SANITIZE=address,undefined and build --target c10d)" >&2
  exit 2
fi
runtimes=""
for rt in libasan.so libubsan.so; do
  path=$(${CXX:-c++} -print-file-name="$rt")
  if [[ "$path" != /* ]]; then
    echo "torch_asan: the compiler does not know where $rt is (got '$path')" >&2
    exit 2
  fi
  runtimes="$runtimes $path"
done

export LD_PRELOAD="${runtimes# }"
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
echo "torch_asan: libc10d $lib; preloading $LD_PRELOAD" >&2
exec ctest --test-dir "$build" -L '^torch$' --output-on-failure "$@"
