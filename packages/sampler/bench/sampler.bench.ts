/**
 * Host sampler speed on one 151,936-wide row (Qwen2's vocabulary): chain + sampling per call, including
 * the copy of fresh logits into the buffer the sampler modifies in place (measured alone as a baseline).
 * Run: `pnpm --filter @ferrum/sampler bench`. Prints a table and writes bench/out/sampler.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import type { SamplerRow } from '@ferrum/interfaces';
import { Bench } from 'tinybench';
import { createSampler } from '../src/index.js';
import { randomLogits } from '../test/reference.js';
import { makeRow, type RowSpec } from '../test/rows.js';

const VOCAB = 151_936;
const PROMPT_TOKENS = 2000;
const OUTPUT_TOKENS = 500;

const source = randomLogits(VOCAB, 2024, 3);
// A peaked head like a real LM row: a handful of tokens well above the bulk.
for (let i = 0; i < 8; i++) source[(i * 7919) % VOCAB] += 12 - i;
const history = (n: number, salt: number) =>
  Array.from({ length: n }, (_, i) => (i * 2654435761 + salt) % VOCAB);
const prompt = history(PROMPT_TOKENS, 1);
const output = history(OUTPUT_TOKENS, 2);

const cases: [string, RowSpec][] = [
  ['greedy', { params: { temperature: 0 } }],
  ['temperature 0.7 + top-k 50 + top-p 0.9', { params: { temperature: 0.7, topK: 50, topP: 0.9 } }],
  ['temperature 0.7 + top-p 0.95 (no top-k)', { params: { temperature: 0.7, topP: 0.95 } }],
  ['temperature 1 + min-p 0.05', { params: { temperature: 1, minP: 0.05 } }],
  ['temperature 1, no truncation', { params: { temperature: 1 } }],
  [
    `penalties (${PROMPT_TOKENS} prompt + ${OUTPUT_TOKENS} output tokens) + temp 0.7 + top-k 50 + top-p 0.9`,
    {
      params: {
        temperature: 0.7,
        topK: 50,
        topP: 0.9,
        repetitionPenalty: 1.1,
        frequencyPenalty: 0.5,
        presencePenalty: 0.5,
      },
      prompt,
      output,
    },
  ],
  ['greedy + 5 raw logprobs', { params: { temperature: 0, logprobs: 5 } }],
  [
    'temp 0.7 + top-k 50 + top-p 0.9 + 5 processed logprobs',
    { params: { temperature: 0.7, topK: 50, topP: 0.9, logprobs: 5, logprobsMode: 'processed' } },
  ],
];

const bench = new Bench({ name: `sampler, one row of ${VOCAB}`, time: 1500, warmupTime: 300 });
const buffer = new Float32Array(VOCAB);
bench.add('copy fresh logits only (baseline)', () => buffer.set(source));
for (const [name, spec] of cases) {
  const sampler = createSampler();
  const rows: SamplerRow[] = [makeRow({ ...spec, seed: 7 })];
  bench.add(name, () => {
    buffer.set(source);
    sampler.sample(buffer, VOCAB, rows);
  });
}

await bench.run();
const results = bench.tasks.map((task) => {
  const latency = task.result?.latency;
  return {
    name: task.name,
    meanMs: latency?.mean,
    p50Ms: latency?.p50,
    minMs: latency?.min,
    p99Ms: latency?.p99,
    samples: latency?.samples.length,
  };
});
const format = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms * 1000).toFixed(0)} µs`);
console.log(
  `${bench.name} (${os.cpus()[0]?.model}, Node ${process.version}, load ${os.loadavg()[0].toFixed(1)})`,
);
console.table(
  results.map((r) => ({
    task: r.name,
    mean: format(r.meanMs),
    p50: format(r.p50Ms),
    min: format(r.minMs),
    p99: format(r.p99Ms),
  })),
);
const url = new URL('./out/', import.meta.url);
mkdirSync(url, { recursive: true });
const machine = {
  cpu: os.cpus()[0]?.model,
  cores: os.cpus().length,
  node: process.version,
  load1m: os.loadavg()[0],
};
writeFileSync(
  new URL('sampler.json', url),
  `${JSON.stringify({ vocabSize: VOCAB, machine, results }, null, 2)}\n`,
);
