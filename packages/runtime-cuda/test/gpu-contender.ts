// A second process that keeps the GPU busy for gpu-contended-repeat.test.ts: the GPU then time-slices between
// its context and the test's, which stops and resumes the test's kernels at arbitrary points. It alternates a
// 200-token prefill with decode steps of 8 sequences (graphs), sampled greedily, until its time is up.
//   usage (forked with tsx): gpu-contender.ts <model dir> <milliseconds>
import { loadModelConfig } from '@ferrum/models';
// The batch builder alone: the testing index also loads the conformance suite, which needs a running vitest.
import { buildBatch, greedyRow, range } from '@ferrum/models/testing/batch-builder';
import { loadCuda } from './load-cuda.js';

const [dir, ms] = process.argv.slice(2);
const config = await loadModelConfig(dir);
const executor = await loadCuda(dir, config);

// Sequence s owns slots from 256 s; token ids are arbitrary.
const tokens = (count: number) => Array.from({ length: count }, (_, i) => (i * 7) % config.vocabSize);
const prefill = buildBatch([{ tokens: tokens(200), kvSlots: range(0, 200), sample: 'last' }], greedyRow);
const decode = buildBatch(
  range(0, 8).map((s) => ({ tokens: tokens(1), kvSlots: range(256 * s, 150 + s), sample: 'last' as const })),
  greedyRow,
);
process.send?.('ready');
const end = Date.now() + Number(ms);
while (Date.now() < end) {
  await executor.forward(prefill);
  for (let i = 0; i < 8; i++) await executor.forward(decode);
}
await executor.dispose();
