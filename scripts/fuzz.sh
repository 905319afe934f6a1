#!/usr/bin/env bash
# The fuzz suite: builds the libFuzzer targets (tests/fuzz/) into build-fuzz with clang, ASan and
# UBSan, then runs each one for C10D_FUZZ_SECONDS seconds (default 20) through ctest (label fuzz).
# Extra args go to ctest. Needs clang and libclang-rt-dev (scripts/install-deps.sh installs them).
# A long run of one target (new inputs go to the scratch corpus in build-fuzz, crashes to the
# -artifact_prefix directory):
#   build-fuzz/bin/tcp_store_server_fuzzer -runs=10000000 -artifact_prefix=build-fuzz/ \
#     build-fuzz/tests/fuzz/corpus-tcp_store_server tests/fuzz/corpus/tcp_store_server
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DC10D_FUZZ=ON -DC10D_BUILD_TESTS=OFF -DC10D_BUILD_TOOLS=OFF -DC10D_WITH_GLOO=OFF \
  -DC10D_FUZZ_SECONDS="${C10D_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build-fuzz --target c10d_fuzzers -j "$(nproc)"
exec ctest --test-dir build-fuzz --output-on-failure --no-tests=error -L fuzz "$@"
