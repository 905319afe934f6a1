#!/usr/bin/env bash
# Configures and builds c10d into build/ (Release with debug info). Extra args go to cmake.
# In CI (CI=true) warnings are errors (-DC10D_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
werror=()
[ "${CI:-}" != true ] || werror=(-DC10D_WERROR=ON)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${werror[@]}" "$@" >/dev/null
cmake --build build -j "$(nproc)"
