// Top logprobs through the engine on the CUDA runtime: the device reports the sampled token's logprob only, so a
// request asking for the n most likely alternatives takes its rows' logits to the host, where the engine's
// sampler finds them. Reference: the same request on the CPU runtime (f32), within bf16 tolerance.
import { createEngine } from '@ferrum/engine';
import { createCudaBackend } from '@ferrum/runtime-cuda';
import type { GenerateRequest } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir, readGolden } from './fixture-models.js';

const probe = await createCudaBackend().probe();
const model = fixtureDir('qwen3-qknorm');

describe.skipIf(!probe.available)(
  `engine on CUDA: top logprobs${probe.available ? '' : ` (skipped: ${probe.reason})`}`,
  () => {
    it('streams the n most likely alternatives of every token, as the CPU runtime does', async () => {
      const golden = readGolden('qwen3-qknorm');
      const request: GenerateRequest = {
        prompt: { tokenIds: golden.prompts[0] },
        sampling: { temperature: 0, maxTokens: 8, ignoreEos: true, logprobs: 4 },
      };
      const run = async (device: 'cuda' | 'cpu') => {
        const engine = await createEngine({ model, device, maxKvTokens: 1024 });
        try {
          const out = await collect(engine.generate(request));
          return out.chunks.flatMap((chunk) => chunk.logprobs ?? []);
        } finally {
          await engine.shutdown();
        }
      };
      const [cuda, cpu] = [await run('cuda'), await run('cpu')];
      expect(cuda.map((l) => l.tokenId)).toEqual(golden.greedy[0].slice(0, 8));
      expect(cuda.map((l) => l.top?.length)).toEqual(Array(8).fill(4));
      for (const [i, l] of cuda.entries()) {
        // Alternatives may swap places at near-ties; each one's logprob matches the CPU's for the same token.
        const reference = new Map(cpu[i].top!.map((e) => [e.tokenId, e.logprob]));
        expect(l.top![0].tokenId).toBe(l.tokenId);
        for (const e of l.top!) {
          if (reference.has(e.tokenId))
            expect(Math.abs(e.logprob - reference.get(e.tokenId)!)).toBeLessThan(2e-2);
        }
        expect(l.top!.filter((e) => reference.has(e.tokenId)).length).toBeGreaterThanOrEqual(3);
      }
    });
  },
);
