// Top logprobs through the engine on the CUDA runtime, which finds the n most likely alternatives on the device
// (its sampling kernel; runtime-cuda's gpu-sampling test checks them against @ferrum/sampler's). Reference:
// transformers' logits at each golden prompt's last position (golden.safetensors), which give the first token's
// alternatives; later tokens' lists are checked for shape and order.
import { createEngine } from '@ferrum/engine';
import { readGolden } from '@ferrum/models/testing';
import { createCudaBackend } from '@ferrum/runtime-cuda';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';

const probe = await createCudaBackend().probe();
const model = fixtureDir('qwen3-qknorm');
const TOP = 4;

/** log_softmax of `row`, best first. */
function logSoftmaxRanked(row: Float32Array): { tokenId: number; logprob: number }[] {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return Array.from(row, (v, tokenId) => ({ tokenId, logprob: v - lse })).sort(
    (a, b) => b.logprob - a.logprob,
  );
}

describe.skipIf(!probe.available)(
  `engine on CUDA: top logprobs${probe.available ? '' : ` (skipped: ${probe.reason})`}`,
  () => {
    it('streams the n most likely alternatives of every token: the first ones as transformers has them', async () => {
      const golden = await readGolden(model);
      const vocab = golden.config.vocabSize;
      const engine = await createEngine({ model, device: 'cuda', maxKvTokens: 1024 });
      try {
        for (const [p, prompt] of golden.prompts.entries()) {
          const out = await collect(
            engine.generate({
              prompt: { tokenIds: prompt },
              sampling: { temperature: 0, maxTokens: 6, ignoreEos: true, logprobs: TOP },
            }),
          );
          const entries = out.chunks.flatMap((chunk) => chunk.logprobs ?? []);
          expect(entries.length).toBe(6);
          for (const e of entries) {
            expect(e.top?.length).toBe(TOP);
            expect(e.top![0]).toEqual({ tokenId: e.tokenId, logprob: e.logprob });
            for (let j = 1; j < TOP; j++)
              expect(e.top![j].logprob).toBeLessThanOrEqual(e.top![j - 1].logprob);
          }
          // The first token's alternatives against transformers' last prompt position, within bf16 tolerance: the
          // same logprobs, and ids outside transformers' top n only where they nearly tie with its n-th.
          const last = golden.logits[p].subarray((prompt.length - 1) * vocab, prompt.length * vocab);
          const ranked = logSoftmaxRanked(last);
          const want = new Map(ranked.map((r) => [r.tokenId, r.logprob]));
          for (const e of entries[0].top!) {
            expect(
              Math.abs(e.logprob - want.get(e.tokenId)!),
              `prompt ${p}, token ${e.tokenId}`,
            ).toBeLessThan(2e-2);
            expect(want.get(e.tokenId)!).toBeGreaterThan(ranked[TOP - 1].logprob - 2e-2);
          }
        }
      } finally {
        await engine.shutdown();
      }
    });
  },
);
