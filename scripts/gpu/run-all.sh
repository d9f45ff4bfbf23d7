#!/usr/bin/env bash
# The runtime-cuda GPU run, each part time-boxed: native build, the package's vitest suite (GPU tests
# included), the engine's GPU chaos test, `ferrum run` / `ferrum serve` / `ferrum bench serve` on a dummy
# Qwen3-4B, a per-depth sweep of Qwen3-4B against transformers (bf16 sdpa, bf16 eager, f32), the
# transformers comparisons of random-weight models of real shapes, a compute-sanitizer memcheck run, and
# runtime-level first numbers. Logs go to $OUT.
#   usage on the device (after `source .gpu/boot.sh`): bash scripts/gpu/run-all.sh [parts...]
#   parts: build test chaos serve sweep compare memcheck gemm bench speed trace (default: all but gemm, speed
#   and trace)
#   env: FERRUM_EMBED_STD (token embedding std of the random models), FERRUM_COMPARE_MODELS (compare's
#   list), FERRUM_SWEEP_DEPTHS (layer counts the sweep cuts Qwen3-4B at), FERRUM_GEMM_ROWS (gemm's list of M),
#   FERRUM_CONFIGS (the models' config.json files by name, default .gpu-data/configs: the device has no
#   ../shared, so before the call run `mkdir -p .gpu-data && cp -r ../shared/fixtures/configs .gpu-data/` and
#   carry .gpu-data)
set -uo pipefail
configs=${FERRUM_CONFIGS:-.gpu-data/configs}
OUT=${OUT:-/tmp/ferrum-out}
mkdir -p "$OUT"
parts=${*:-build test chaos serve sweep compare memcheck bench}
tsx="packages/runtime-cuda/node_modules/.bin/tsx --conditions=@ferrum/source"
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=16 FERRUM_CUDA_ARCHS=${FERRUM_CUDA_ARCHS:-90a}
embed=${FERRUM_EMBED_STD:+--embed-std $FERRUM_EMBED_STD}
tag=${FERRUM_EMBED_STD:+-embed$FERRUM_EMBED_STD}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
has() { [[ " $parts " == *" $1 "* ]]; }
if [[ ! -f "$configs/qwen3-4b.json" ]] && { has serve || has sweep || has compare || has speed || has trace || has bench; }; then
  echo "run-all: $configs/qwen3-4b.json is missing (copy ../shared/fixtures/configs there, or set FERRUM_CONFIGS)" >&2
  exit 2
fi
# Ferrum's logits of the schedule for the model in $1 and for each depth<d>/ cut of it.
ferrumDepths() {
  local dir=$1 sub d
  for sub in "$dir" "$dir"/depth*; do
    d=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_hidden_layers'])" "$sub/config.json")
    timeout 60 $tsx scripts/gpu/run-schedule.ts "$sub" "$dir/ferrum-depth$d.bin" "$dir/schedule.json" || return 1
  done
}
stamp() { echo "[$(date +%T)] $*"; }
# The SM clock, temperature and power every 100 ms while a part runs, summarized after it over the busy samples
# (above 120 W; the idle H100 drew ~76 W at 345 MHz): the clock moves with the load (back-to-back 512-token
# prefills on the H100 took it from 1,980 MHz to 1,740-1,875 within seconds, and their GPU time from 7.5 to 7.9
# ms), so a figure's spread between calls is read next to the clocks it ran at.
clocksStart() {
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader,nounits -lms 100 \
    > "$OUT/$1-clocks.csv" 2> /dev/null &
  clockSampler=$!
}
clocksStop() {
  kill "$clockSampler" 2> /dev/null; wait "$clockSampler" 2> /dev/null
  python3 - "$OUT/$1-clocks.csv" "$1" <<'PY'
import statistics, sys
rows = [[float(v) for v in line.split(",")] for line in open(sys.argv[1]) if line.count(",") == 2]
busy = [row for row in rows if row[2] > 120]
if busy:
    mhz, temp, watts = zip(*busy)
    print(f"clocks during {sys.argv[2]} ({len(busy)} busy samples of {len(rows)}): SM {min(mhz):.0f} / {statistics.median(mhz):.0f} / "
          f"{max(mhz):.0f} MHz (min / median / max), temperature max {max(temp):.0f} C, "
          f"power median {statistics.median(watts):.0f} W, max {max(watts):.0f} W")
PY
}

if has build; then
  (cd packages/runtime-cuda && time node scripts/build-native.mjs) > "$OUT/build.log" 2>&1
  stamp build; tail -3 "$OUT/build.log"
fi
if has test; then
  timeout 240 npx vitest run packages/runtime-cuda > "$OUT/vitest.log" 2>&1
  stamp test; grep -E "Test Files|Tests|FAIL|✗|×" "$OUT/vitest.log" | head -40
  # A failure's message on stdout too: $OUT's files do not always come back from the device.
  grep -A40 "Failed Tests" "$OUT/vitest.log" | head -60
fi
if has chaos; then
  timeout 240 npx vitest run packages/engine/test/gpu-chaos.test.ts > "$OUT/chaos.log" 2>&1
  stamp chaos; grep -E "gpu chaos|Test Files|Tests|FAIL|AssertionError|Error" "$OUT/chaos.log" | head -20
fi
if has serve; then
  # Issue 7's serving figure: `ferrum bench serve` against `ferrum serve` at concurrency 1 and 8, 512 in, 256 out.
  stamp serve; timeout 300 bash scripts/gpu/serve-bench.sh "$configs/qwen3-4b.json" cuda 512 256 2>&1 | tee "$OUT/serve-bench.log"
fi
if has sweep; then
  # Qwen3-4B cut after d layers: where does Ferrum's error against the f32 reference grow, and does
  # transformers' own bf16 error grow alike?
  dir=/tmp/ferrum-models/qwen3-4b-sweep
  { timeout 240 python3 scripts/gpu/make_reference.py make --config "$configs/qwen3-4b.json" --model "$dir" \
      --seed 11 $embed --depths "${FERRUM_SWEEP_DEPTHS:-1,2,4,8,12,18,24,30}" &&
    ferrumDepths "$dir" &&
    python3 scripts/gpu/make_reference.py compare --model "$dir" --ferrum "$dir/ferrum-depth{depth}.bin" \
      --results "$OUT/sweep$tag.jsonl"; } > "$OUT/sweep.log" 2>&1
  stamp sweep; grep -E "depth|rows, |top-1 ferrum|PASS|FAIL|Error|error" "$OUT/sweep.log" | head -30
  rm -rf "$dir"
fi
if has compare; then
  for name in ${FERRUM_COMPARE_MODELS:-qwen3-0.6b llama-3.2-1b qwen3-4b}; do
    dir=/tmp/ferrum-models/$name
    { timeout 200 python3 scripts/gpu/make_reference.py make --config "$configs/$name.json" --model "$dir" --seed 11 $embed &&
      timeout 120 $tsx scripts/gpu/run-schedule.ts "$dir" "$dir/ferrum-logits.bin" &&
      python3 scripts/gpu/make_reference.py compare --model "$dir" --ferrum "$dir/ferrum-logits.bin" --results "$OUT/compare$tag.jsonl"
      rm -rf "$dir"; } >> "$OUT/compare.log" 2>&1
  done
  stamp compare; grep -E "rows, |top-1 ferrum|PASS|FAIL|Error|error" "$OUT/compare.log" | head -30
fi
if has memcheck; then
  mkdir -p /tmp/ferrum-tiny && cp fixtures/tiny-models/qwen3-qknorm/* /tmp/ferrum-tiny/
  timeout 240 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 \
    node --conditions=@ferrum/source --import "$(pwd)/packages/runtime-cuda/node_modules/tsx/dist/esm/index.mjs" \
    scripts/gpu/run-schedule.ts /tmp/ferrum-tiny /tmp/ferrum-tiny/out.bin scripts/gpu/tiny-schedule.json > "$OUT/memcheck.log" 2>&1
  stamp memcheck; tail -4 "$OUT/memcheck.log"
fi
if has speed; then
  # Issue 7: Ferrum's speed table (runtime and engine level, each figure by its floor), then transformers.
  clocksStart speed
  timeout 420 $tsx scripts/gpu/bench-speed.ts "$configs/qwen3-4b.json" "$OUT/speed.json" > "$OUT/speed.log" 2>&1
  stamp speed; grep -E "^\||failed|Error" "$OUT/speed.log" | head -60
  clocksStop speed
  # Its batch-8 run compiles a decode step per cache length first: 200 s once left it unfinished.
  clocksStart transformers
  timeout 300 python3 scripts/gpu/bench_transformers.py "$configs/qwen3-4b.json" "$OUT/speed-transformers.json" \
    "${FERRUM_HF_NEW_TOKENS:-128}" > "$OUT/speed-transformers.log" 2>&1
  stamp transformers; grep -E "^transformers|Error" "$OUT/speed-transformers.log" | head
  clocksStop transformers
  python3 scripts/gpu/speed_ratio.py "$OUT/speed.json" "$OUT/speed-transformers.json" "$OUT/speed-ratio.json" 2>&1 |
    tee "$OUT/speed-ratio.log"
fi
if has trace; then
  # Where an engine TTFT goes: engine work before the step, the step's wall and GPU time, engine work after.
  timeout 200 $tsx scripts/gpu/trace-ttft.ts "$configs/qwen3-4b.json" "$OUT/trace.json" > "$OUT/trace.log" 2>&1
  stamp trace; grep -E "^\||Error" "$OUT/trace.log" | head -24
fi
if has gemm; then
  # Decode GEMM paths side by side (GEMV, cuBLASLt, tuned; gate|up also with SwiGLU fused) per layer product and M.
  timeout 200 $tsx scripts/gpu/bench-gemm.ts "$OUT/gemm.json" ${FERRUM_GEMM_ROWS:-} > "$OUT/gemm.log" 2>&1
  stamp gemm; grep -E "^\||ceiling|Error" "$OUT/gemm.log" | head -100
fi
if has bench; then
  # Runtime-level figures only (one executor, each by its floor): the quick part of bench-speed.ts.
  timeout 200 $tsx scripts/gpu/bench-speed.ts "$configs/qwen3-4b.json" "$OUT/bench.json" ceilings,runtime > "$OUT/bench.log" 2>&1
  stamp bench; grep -E "^\||failed|Error" "$OUT/bench.log" | head -30
fi
