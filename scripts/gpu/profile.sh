#!/usr/bin/env bash
# Kernel-by-kernel times of one eager forward per scenario (Nsight Compute, clocks left alone), as
# markdown tables in $OUT/profile.md. Only the scenarios' profiled round is (profile-steps.ts): not the load, its
# GEMM tuning, or the warm-up round.
#   usage on the device (after `source .gpu/boot.sh`): bash scripts/gpu/profile.sh <config.json> <scenario>...
#   env: FERRUM_PROFILE_LAYERS cuts the model to that many layers (see profile-steps.ts)
set -uo pipefail
OUT=${OUT:-/tmp/ferrum-out}
config=$1
shift
timeout 400 ncu --clock-control none --profile-from-start off --csv --page raw \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --kernel-name-base function --kernel-name 'regex:^(?!fill|convert).*' \
  node --conditions=@ferrum/source --import "$(pwd)/packages/runtime-cuda/node_modules/tsx/dist/esm/index.mjs" \
  scripts/gpu/profile-steps.ts "$config" "${FERRUM_PROFILE_LAYERS:-0}" "$@" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu exit $?"
tail -3 "$OUT/ncu.err"
python3 scripts/gpu/ncu-table.py "$OUT/ncu.csv" "$@" > "$OUT/profile.md"
head -c 6000 "$OUT/profile.md"
