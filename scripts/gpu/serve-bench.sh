#!/usr/bin/env bash
# `ferrum run` and `ferrum serve` on a dummy-weight model of a real shape, then `ferrum bench serve` against
# the server at concurrency 1 and 8 (random token-id prompts, EOS ignored, greedy). Logs and result JSON go
# to $OUT. The model directory holds only config.json: prompts are token ids (no tokenizer).
#   usage: bash scripts/gpu/serve-bench.sh <config.json> [device] [input-len] [output-len]
set -uo pipefail
OUT=${OUT:-/tmp/ferrum-out}
config=$1 device=${2:-cuda} inputLen=${3:-512} outputLen=${4:-128}
name=$(basename "$config" .json)
dir=/tmp/ferrum-dummy/$name
mkdir -p "$dir" "$OUT" && cp "$config" "$dir/config.json"
# node itself, not a wrapper or a function's subshell, so that `kill` reaches the server.
ferrum=(node --conditions=@ferrum/source --import "$PWD/packages/cli/node_modules/tsx/dist/esm/index.mjs" packages/cli/src/bin.ts)
vocab=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$config','utf8')).vocab_size)")
engineFlags=(--model "$dir" --load-format dummy --device "$device" --max-num-seqs 64)

# One generation through `ferrum run`; --json prints token ids, finish reason and usage.
start=$(date +%s%N)
"${ferrum[@]}" run "${engineFlags[@]}" --prompt-ids "$(seq -s, 100 131)" --max-tokens 64 --ignore-eos --temperature 0 \
  --json --verbose > "$OUT/run-$name.json" 2> "$OUT/run-$name.log"
echo "ferrum run: exit $?, $(( ($(date +%s%N) - start) / 1000000 )) ms wall (start-up and load included)"
tail -c 400 "$OUT/run-$name.json"; echo

"${ferrum[@]}" serve "${engineFlags[@]}" --port 8000 > "$OUT/serve-$name.log" 2>&1 &
server=$!
for _ in $(seq 120); do
  curl -sf http://127.0.0.1:8000/health > /dev/null && break
  kill -0 "$server" 2> /dev/null || break
  sleep 1
done
if ! curl -sf http://127.0.0.1:8000/health > /dev/null; then
  echo "serve: not healthy"; tail -20 "$OUT/serve-$name.log"; kill "$server" 2> /dev/null; exit 1
fi
curl -s http://127.0.0.1:8000/v1/completions -H 'content-type: application/json' \
  -d '{"model":"'"$name"'","prompt":[1,2,3,4,5,6,7,8],"max_tokens":16,"temperature":0}' | head -c 600; echo

bench() { # concurrency, prompts, label
  "${ferrum[@]}" bench serve --base-url http://127.0.0.1:8000 --concurrency "$1" --num-prompts "$2" \
    --input-len "$inputLen" --output-len "$outputLen" --vocab-size "$vocab" --seed "$1" \
    --result-file "$OUT/bench-$name-$3.json" 2>&1 | tee "$OUT/bench-$name-$3.log" | grep -E "Successful|Failed|Output token|TTFT|TPOT"
}
bench 8 8 warmup > /dev/null  # cuBLASLt plans for the step shapes of both runs
echo "== concurrency 1"; bench 1 8 c1
echo "== concurrency 8"; bench 8 32 c8
curl -s http://127.0.0.1:8000/metrics | grep -E "^ferrum:(num_preemptions|request_success|generation_tokens)" | head
kill -TERM "$server"  # not SIGINT: a background job of a script ignores it
wait "$server"
echo "serve: exit $?"
tail -3 "$OUT/serve-$name.log"
