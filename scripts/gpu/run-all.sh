#!/usr/bin/env bash
# The runtime-cuda GPU run, in priority order, each part time-boxed: native build, the package's vitest
# suite (GPU tests included), transformers comparisons on random-weight models of real shapes, a
# compute-sanitizer memcheck run, and runtime-level first numbers. Logs go to $OUT.
#   usage on the device (after `source .gpu/boot.sh`): bash scripts/gpu/run-all.sh [parts...]
#   parts: build test compare memcheck bench (default: all)
set -uo pipefail
OUT=${OUT:-/tmp/ferrum-out}
mkdir -p "$OUT"
parts=${*:-build test compare memcheck bench}
tsx="packages/runtime-cuda/node_modules/.bin/tsx --conditions=@ferrum/source"
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 FERRUM_CUDA_ARCHS=${FERRUM_CUDA_ARCHS:-90a}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"

if [[ " $parts " == *" build "* ]]; then
  (cd packages/runtime-cuda && time node scripts/build-native.mjs) > "$OUT/build.log" 2>&1
  tail -3 "$OUT/build.log"
fi
if [[ " $parts " == *" test "* ]]; then
  timeout 240 npx vitest run packages/runtime-cuda > "$OUT/vitest.log" 2>&1
  grep -E "Test Files|Tests|FAIL|✗|×" "$OUT/vitest.log" | head -40
fi
if [[ " $parts " == *" compare "* ]]; then
  for name in qwen3-0.6b llama-3.2-1b qwen3-4b; do
    dir=/tmp/ferrum-models/$name
    { timeout 200 python3 scripts/gpu/make_reference.py make --config ".gpu-data/configs/$name.json" --model "$dir" --seed 11 ${FERRUM_EMBED_STD:+--embed-std $FERRUM_EMBED_STD} &&
      timeout 120 $tsx scripts/gpu/run-schedule.ts "$dir" "$dir/ferrum-logits.bin" &&
      python3 scripts/gpu/make_reference.py compare --model "$dir" --ferrum "$dir/ferrum-logits.bin" --results "$OUT/compare${FERRUM_EMBED_STD:+-embed$FERRUM_EMBED_STD}.jsonl"
      rm -rf "$dir"; } >> "$OUT/compare.log" 2>&1
  done
  grep -E "PASS|FAIL|Error|error" "$OUT/compare.log" | head -20
fi
if [[ " $parts " == *" memcheck "* ]]; then
  mkdir -p /tmp/ferrum-tiny && cp fixtures/tiny-models/qwen3-qknorm/* /tmp/ferrum-tiny/
  timeout 240 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 \
    node --conditions=@ferrum/source --import "$(pwd)/packages/runtime-cuda/node_modules/tsx/dist/esm/index.mjs" \
    scripts/gpu/run-schedule.ts /tmp/ferrum-tiny /tmp/ferrum-tiny/out.bin scripts/gpu/tiny-schedule.json > "$OUT/memcheck.log" 2>&1
  tail -4 "$OUT/memcheck.log"
fi
if [[ " $parts " == *" bench "* ]]; then
  timeout 200 $tsx scripts/gpu/bench-runtime.ts .gpu-data/configs/qwen3-4b.json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  tail -20 "$OUT/bench.log"
fi
