#!/usr/bin/env bash
# The compiler-checked build: everything, the tests included, built with clang into build-clang
# with -Werror and -Wthread-safety, so the lock annotations (c10d/base/thread_annotations.h:
# C10D_GUARDED_BY, C10D_REQUIRES, ...) are checked and a new warning of either compiler fails CI
# (.ci/run runs it; nothing is run from this build). Extra args go to cmake (e.g.
# -DC10D_BUILD_TESTS=OFF for the library and tools only). Needs clang (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DC10D_WERROR=ON -DC10D_BUILD_TESTS=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@" >/dev/null
cmake --build build-clang -j "$(nproc)"
echo "clang-check: built with clang, -Wthread-safety and -Werror: no warning"
