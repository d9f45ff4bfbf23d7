// Replays a schedule written by make_reference.py on the CUDA backend and writes the logits of every
// sampled row (f32, row-major) for the comparison. Sequences get contiguous slot ranges; C's first 128
// KV entries are A's slots (the prefix-cache hit), so its step prefills only its own suffix.
// A last step repeats the final one with the device sampling chain on, so a memcheck run covers it too.
//   usage: tsx scripts/gpu/run-schedule.ts <model dir> <out.bin> [schedule.json]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadModelConfig } from '../../packages/models/src/index.js';
// batch-builder directly: the testing index also loads the conformance suite, which needs a running vitest.
import { buildBatch } from '../../packages/models/src/testing/batch-builder.js';
import { createCudaBackend } from '../../packages/runtime-cuda/src/index.js';
import {
  type ForwardBatch,
  type RowSampling,
  resolveSamplingParams,
} from '../../packages/types/src/index.js';

const [modelDir, outFile, scheduleFile] = process.argv.slice(2);
const schedule = JSON.parse(readFileSync(scheduleFile ?? path.join(modelDir, 'schedule.json'), 'utf8')) as {
  seqs: Record<string, number[]>;
  steps: [string, number, number][][];
  ropeFrequencies: 'f32' | 'bf16';
};
const config = await loadModelConfig(modelDir);
const executor = await createCudaBackend().loadModel({
  modelDir,
  config,
  loadFormat: 'safetensors',
  maxKvTokens: 4096,
  maxBatchTokens: 1024,
  maxBatchSeqs: 8,
  backendOptions: { ropeFrequencies: schedule.ropeFrequencies, swapSpaceTokens: 0 },
});
const slots: Record<string, number[]> = {};
let next = 0;
for (const [name, tokens] of Object.entries(schedule.seqs)) {
  slots[name] = Array.from({ length: tokens.length }, () => next++);
}
slots.C.splice(0, 128, ...slots.A.slice(0, 128));

const rows: Float32Array[] = [];
const sampled = {
  temperature: 0.9,
  topK: 20,
  topP: 0.9,
  minP: 0.01,
  repetitionPenalty: 1.1,
  logitBias: { 3: 2 },
};
let lastBatch: ForwardBatch | undefined;
for (const step of schedule.steps) {
  // Each entry: a sequence's tokens [start, start + count) over its slots up to there, last row sampled.
  lastBatch = buildBatch(
    step.map(([name, start, count]) => ({
      tokens: schedule.seqs[name].slice(start, start + count),
      kvSlots: slots[name].slice(0, start + count),
      sample: 'last' as const,
    })),
  );
  rows.push((await executor.forward(lastBatch)).logits!);
}
if (lastBatch) {
  const sampling = Array.from(
    lastBatch.sampleRows,
    (_, i): RowSampling => ({
      requestId: `row${i}`,
      params: resolveSamplingParams({ ...sampled, logprobs: 0 }),
      seed: i,
      promptTokenIds: lastBatch!.tokenIds,
      outputTokenIds: lastBatch!.tokenIds.subarray(0, 1),
      needsHostLogits: i === 0,
    }),
  );
  const { tokens } = await executor.forward({ ...lastBatch, sampling });
  console.log(`run-schedule: sampled tokens ${Array.from(tokens).join(' ')}`);
}
await executor.dispose();
const total = rows.reduce((n, r) => n + r.length, 0);
const out = new Float32Array(total);
let at = 0;
for (const r of rows) {
  out.set(r, at);
  at += r.length;
}
writeFileSync(outFile, Buffer.from(out.buffer));
console.log(`run-schedule: ${schedule.steps.length} steps, ${total / config.vocabSize} rows -> ${outFile}`);
