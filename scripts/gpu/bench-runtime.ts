// Runtime-level first numbers on the GPU: a dummy-weight model of a real shape, prefill time of one prompt
// (TTFT without the engine) and decode tokens/s at several batch sizes, greedy sampling on the device.
//   usage: tsx scripts/gpu/bench-runtime.ts <config.json> <out.json>
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadModelConfig } from '../../packages/models/src/index.js';
import { createCudaBackend } from '../../packages/runtime-cuda/src/index.js';
import {
  DEFAULT_SAMPLING_PARAMS,
  type ForwardBatch,
  type RowSampling,
} from '../../packages/types/src/index.js';

const [configFile, outFile] = process.argv.slice(2);
const dir = mkdtempSync(path.join(os.tmpdir(), 'ferrum-bench-'));
copyFileSync(configFile, path.join(dir, 'config.json'));
const config = await loadModelConfig(dir);
const started = performance.now();
const executor = await createCudaBackend().loadModel({
  modelDir: dir,
  config,
  loadFormat: 'dummy',
  maxKvTokens: 131072,
  maxBatchTokens: 4096,
  maxBatchSeqs: 64,
  seed: 1,
});
const loadMs = performance.now() - started;
const greedy: RowSampling = {
  requestId: 'bench',
  params: { ...DEFAULT_SAMPLING_PARAMS, temperature: 0 },
  seed: 0,
  outputTokenIds: new Int32Array(0),
  promptTokenIds: new Int32Array(0),
  needsHostLogits: false,
};

/** One step for `seqs` sequences of `newTokens` new tokens each over a context of `context` tokens. */
function batch(seqs: number, context: number, newTokens: number, base: number): ForwardBatch {
  const T = seqs * newTokens;
  const tokenIds = new Int32Array(T).map((_, i) => (i * 7919) % config.vocabSize);
  const positions = new Int32Array(T);
  const slotMapping = new Int32Array(T);
  const kvIndices = new Int32Array(seqs * context);
  const qIndptr = new Int32Array(seqs + 1);
  const kvIndptr = new Int32Array(seqs + 1);
  const sampleRows = new Int32Array(seqs);
  for (let s = 0; s < seqs; s++) {
    const slot0 = base + s * 4096;
    for (let j = 0; j < context; j++) kvIndices[s * context + j] = slot0 + j;
    for (let i = 0; i < newTokens; i++) {
      positions[s * newTokens + i] = context - newTokens + i;
      slotMapping[s * newTokens + i] = slot0 + context - newTokens + i;
    }
    qIndptr[s + 1] = (s + 1) * newTokens;
    kvIndptr[s + 1] = (s + 1) * context;
    sampleRows[s] = (s + 1) * newTokens - 1;
  }
  return {
    tokenIds,
    positions,
    qIndptr,
    kvIndptr,
    kvIndices,
    slotMapping,
    sampleRows,
    numSeqs: seqs,
    numTokens: T,
    sampling: Array(seqs).fill(greedy),
  };
}

async function timeMs(run: () => Promise<unknown>, repeats: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

const results: Record<string, number> = { loadMs };
for (const prompt of [32, 512, 2048]) {
  await executor.forward(batch(1, prompt, prompt, 0)); // warm-up (cuBLASLt plans)
  results[`prefill${prompt}Ms`] = await timeMs(() => executor.forward(batch(1, prompt, prompt, 0)), 5);
}
for (const seqs of [1, 8, 32]) {
  const context = 512;
  // Prefill the contexts four sequences per step (maxBatchTokens), each at its own slot range.
  for (let s = 0; s < seqs; s += 4)
    await executor.forward(batch(Math.min(4, seqs - s), context, context, s * 4096));
  let length = context;
  const stepMs = await timeMs(() => executor.forward(batch(seqs, ++length, 1, 0)), 64);
  results[`decodeB${seqs}StepMs`] = stepMs;
  results[`decodeB${seqs}TokensPerS`] = (seqs * 1000) / stepMs;
}
await executor.dispose();
console.table(results);
writeFileSync(outFile, JSON.stringify({ config: path.basename(configFile), ...results }, null, 2));
