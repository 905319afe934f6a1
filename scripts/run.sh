#!/usr/bin/env bash
# The main job: install what is missing, build into build/, and run the all-reduce bandwidth
# benchmark on 4 local ranks through c10drun (with correctness checking on).
# Extra args replace the benchmark's default flags, e.g. scripts/run.sh -b 1K -e 1M -f 2 --backend gloo
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-b 8 -e 64M -f 4 -c 1)
exec build/bin/c10drun --nproc-per-node "${NPROC:-4}" build/bin/all_reduce_perf "${args[@]}"
