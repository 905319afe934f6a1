#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds a tiny outside project against it
# twice: with find_package(c10d CONFIG) and with pkg-config. Fails on any error.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/c10d-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/c10d/core/process_group.h"
test -f "$work/prefix/include/c10d/base/config.h"
test -f "$work/prefix/include/c10d/store/tcp/tcp_store.h"
test -f "$work/prefix/include/c10d/layers/ddp/reducer.h"
test -f "$work/prefix/include/c10d/layers/zero/sharded_optimizer.h"
test -f "$work/prefix/include/c10d/c10d.h"
libdir=$(ls -d "$work"/prefix/lib*/ | head -n1)
# Consumers put <prefix>/include on their path, nothing below it (c10d's folders have generic
# names: core/, base/, ...).
pc_cflags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags-only-I c10d)
case " $pc_cflags " in
  *"/include/c10d "*) echo "install test: c10d.pc puts include/c10d on the path: $pc_cflags" >&2; exit 1 ;;
esac

# 1. CMake package.
cmake -S "$src_dir/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  > "$work/configure.log"
cmake --build "$work/consumer-build" > "$work/build.log"
LD_LIBRARY_PATH="$libdir" "$work/consumer-build/consumer"

# 2. pkg-config: with the compiler's default standard, and as a C++20 program (the .pc must not
# pin a standard: a -std=c++17 in Cflags would come after the consumer's own and win).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cflags=$(pkg-config --cflags c10d)
case " $cflags " in
  *" -std="*) echo "install test: c10d.pc Cflags pin a language standard: $cflags" >&2; exit 1 ;;
esac
# shellcheck disable=SC2046
c++ -I"$src_dir/consumer" "$src_dir/consumer/main.cc" -o "$work/consumer-pc" $(pkg-config --cflags --libs c10d)
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc"
# shellcheck disable=SC2046
c++ -std=c++20 -DC10D_CONSUMER_EXPECT_CXX20 -I"$src_dir/consumer" "$src_dir/consumer/main.cc" -o "$work/consumer-pc20" \
  $(pkg-config --cflags --libs c10d)
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc20"

# 3. The C ABI from a C program: the installed header compiles as strict C99 and the library
# reports the ABI version the header was written for (SONAME libc10d.so.<ABI>).
header="$work/prefix/include/c10d/c_api.h"
test ! -e "$work/prefix/include/c10d/c_api_internal.h"  # the implementation's, not installed
abi=$(sed -n 's/^#define C10D_ABI_VERSION \([0-9]*\)$/\1/p' "$header")
test -e "$libdir/libc10d.so.$abi"
cat > "$work/consumer.c" <<'CEOF'
#include <c10d/c_api.h>
#include <stdio.h>
int main(void) {
  printf("c10d %s, C ABI %u\n", c10d_version(), (unsigned)c10d_abi_version());
  return c10d_abi_version() == C10D_ABI_VERSION ? 0 : 1;
}
CEOF
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -pedantic -Werror "$work/consumer.c" -o "$work/consumer-c" \
  $(pkg-config --cflags --libs c10d)
LD_LIBRARY_PATH="$libdir" "$work/consumer-c"
echo "install test: OK"
