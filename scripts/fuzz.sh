#!/usr/bin/env bash
# The fuzz suite: builds the libFuzzer targets (tests/fuzz/) into build-fuzz with clang, ASan and
# UBSan, then runs each one for C10D_FUZZ_SECONDS seconds (default 20) through ctest (label fuzz).
# Extra args go to ctest. Needs clang and libclang-rt-dev (scripts/install-deps.sh installs them).
# Long runs, whose corpus and crashes are kept in the tree: scripts/fuzz-campaign.sh.
# C10D_FUZZ_WHOLE_LIBRARY=OFF leaves out the targets that need an instrumented copy of the whole
# library (c10d_api, train_mlp_checkpoint): what CI does, to fit its time. The gloo backend is in
# when Debian's libgloo is (as in scripts/fuzz-campaign.sh, which shares build-fuzz: the same
# configuration keeps the two from rebuilding each other's library).
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DC10D_FUZZ=ON -DC10D_BUILD_TESTS=OFF -DC10D_BUILD_TOOLS=OFF -DC10D_WITH_GLOO=AUTO \
  -DC10D_FUZZ_SECONDS="${C10D_FUZZ_SECONDS:-20}" \
  -DC10D_FUZZ_WHOLE_LIBRARY="${C10D_FUZZ_WHOLE_LIBRARY:-ON}" >/dev/null
cmake --build build-fuzz --target c10d_fuzzers -j "$(nproc)"
exec ctest --test-dir build-fuzz --output-on-failure --no-tests=error -L fuzz "$@"
