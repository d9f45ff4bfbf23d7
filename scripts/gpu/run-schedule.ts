// Replays a schedule written by make_reference.py on the CUDA backend and writes the logits of EVERY row of
// every step (f32, row-major, host logits), in feeding order: the order of make_reference.py's reference
// rows. Sequences get contiguous slot ranges; a prefix hit (C's first 128 tokens are A's) points the
// sequence's first KV entries at the other's slots, so its step prefills only its own suffix.
// A last step repeats the final one with the device sampling chain on, so a memcheck run covers it too.
//   usage: tsx scripts/gpu/run-schedule.ts <model dir> <out.bin> [schedule.json]
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
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
  /** Per step, per sequence: [name, start, count], its tokens [start, start + count) fed this step. */
  steps: [string, number, number][][];
  /** Sequence name → the sequence whose first `tokens` KV slots it reuses. */
  prefixHits: Record<string, { from: string; tokens: number }>;
  ropeFrequencies: 'f32' | 'bf16';
};
const stepRows = schedule.steps.map((step) => step.reduce((n, [, , count]) => n + count, 0));
const config = await loadModelConfig(modelDir);
const executor = await createCudaBackend().loadModel({
  modelDir,
  config,
  loadFormat: 'safetensors',
  maxKvTokens: 4096,
  maxBatchTokens: 1024,
  maxBatchSeqs: 8,
  backendOptions: {
    ropeFrequencies: schedule.ropeFrequencies,
    swapSpaceTokens: 0,
    // Every row of a step is sampled (host logits): the logits buffers must hold the largest step.
    maxSampleRows: Math.max(...stepRows),
  },
});
const slots: Record<string, number[]> = {};
let next = 0;
for (const [name, tokens] of Object.entries(schedule.seqs)) {
  slots[name] = Array.from({ length: tokens.length }, () => next++);
}
for (const [name, hit] of Object.entries(schedule.prefixHits)) {
  slots[name].splice(0, hit.tokens, ...slots[hit.from].slice(0, hit.tokens));
}

const sampled = {
  temperature: 0.9,
  topK: 20,
  topP: 0.9,
  minP: 0.01,
  repetitionPenalty: 1.1,
  logitBias: { 3: 2 },
};
// Rows go to the file step by step, so a long schedule never holds all its logits at once.
const out = openSync(outFile, 'w');
let numRows = 0;
let lastBatch: ForwardBatch | undefined;
for (const [index, step] of schedule.steps.entries()) {
  // Each entry: a sequence's tokens [start, start + count) over its slots up to there, every row sampled.
  lastBatch = buildBatch(
    step.map(([name, start, count]) => ({
      tokens: schedule.seqs[name].slice(start, start + count),
      kvSlots: slots[name].slice(0, start + count),
      sample: 'all' as const,
    })),
  );
  const { logits } = await executor.forward(lastBatch);
  if (logits?.length !== lastBatch.numTokens * config.vocabSize) {
    throw new Error(
      `step ${index}: expected ${lastBatch.numTokens} logits rows, got ${logits?.length ?? 0} values`,
    );
  }
  writeFileSync(out, logits); // at the file's position: appends
  numRows += lastBatch.numTokens;
}
closeSync(out);
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
console.log(`run-schedule: ${schedule.steps.length} steps, ${numRows} rows -> ${outFile}`);
