// Chaos through the whole engine on the CUDA runtime: a pool far smaller than the workload (peak use
// ≥ 90%), swap preemption to the runtime's pinned host tier, and random aborts (after some chunks, or on a
// timer that may land while a request waits, prefills or is swapped out). Nothing may crash or be lost,
// the pool must be whole at the end, and every completed output must be what an unpressured run gives:
// identical, or diverging first at a near-tie of that run's top tokens (bf16 batch-composition rounding).
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { createCudaBackend } from '@ferrum/runtime-cuda';
import { seededRandom, type TokenLogprob } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { fixtureDir } from './fixture-models.js';
import { capturedKvCache } from './kv-capture.js';

const model = fixtureDir('qwen3-qknorm');
const probe = await createCudaBackend().probe();

const NUM_REQUESTS = 96;
/** As the CPU chaos test counts it: the pool holds 10% of what the requests need together. */
const PRESSURE = 0.9;
/** Top-token logprob gap under which two bf16 runs may pick differently: 1% of these models' ~5-nat range. */
const NEAR_TIE = 0.05;

interface ChaosRequest {
  readonly id: string;
  readonly prompt: number[];
  readonly maxTokens: number;
  readonly startMs: number;
  /** Abort once this many chunks arrived, or this many ms after the start. */
  readonly abortAfterChunks?: number;
  readonly abortAfterMs?: number;
}

interface Outcome {
  readonly tokens: number[];
  readonly logprobs: TokenLogprob[];
  readonly finishReason: string | undefined;
}

function workload(seed: number): ChaosRequest[] {
  const random = seededRandom(seed);
  const next = (n: number) => Math.floor(random() * n);
  const ids = (n: number) => Array.from({ length: n }, () => 3 + next(509));
  const shared = ids(64);
  return Array.from({ length: NUM_REQUESTS }, (_, i) => {
    const prompt = next(4) === 0 ? [...shared, ...ids(8 + next(32))] : ids(16 + next(104));
    const roll = next(10);
    return {
      id: `r${i}`,
      prompt,
      maxTokens: 8 + next(88),
      startMs: next(50),
      abortAfterChunks: roll === 0 ? 1 + next(8) : undefined,
      abortAfterMs: roll === 1 ? next(100) : undefined,
    };
  });
}

/** The CUDA backend, counting the swaps the engine asks of its KV storage. */
function countingCuda(counts: { swapOut: number; swapIn: number }): ComputeBackend {
  const cuda = createCudaBackend();
  return {
    specificationVersion: 'v1',
    name: cuda.name,
    probe: () => cuda.probe(),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cuda.loadModel(spec);
      const kv = inner.kv;
      return {
        info: inner.info,
        kv: {
          numSlots: kv.numSlots,
          numHostSlots: kv.numHostSlots,
          copySlots: (src, dst) => kv.copySlots(src, dst),
          swapOut: (device, host) => {
            counts.swapOut++;
            return kv.swapOut(device, host);
          },
          swapIn: (host, device) => {
            counts.swapIn++;
            return kv.swapIn(host, device);
          },
        },
        forward: (batch) => inner.forward(batch),
        dispose: () => inner.dispose(),
      };
    },
  };
}

async function play(
  engine: FerrumEngine,
  requests: readonly ChaosRequest[],
  options: { chaos: boolean; logprobs: number | null; onChunk?: () => void },
): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  const one = async (r: ChaosRequest) => {
    if (options.chaos) await new Promise((resolve) => setTimeout(resolve, r.startMs));
    const controller = new AbortController();
    const timer =
      options.chaos && r.abortAfterMs !== undefined
        ? setTimeout(() => controller.abort(), r.abortAfterMs)
        : undefined;
    const tokens: number[] = [];
    const logprobs: TokenLogprob[] = [];
    let finishReason: string | undefined;
    let numChunks = 0;
    const sampling = { temperature: 0, maxTokens: r.maxTokens, ignoreEos: true, logprobs: options.logprobs };
    const stream = engine.generate(
      { id: r.id, prompt: { tokenIds: r.prompt }, sampling },
      { signal: controller.signal },
    );
    for await (const chunk of stream) {
      tokens.push(...chunk.tokenIds);
      logprobs.push(...(chunk.logprobs ?? []));
      finishReason = chunk.finishReason ?? finishReason;
      options.onChunk?.();
      if (options.chaos && ++numChunks === r.abortAfterChunks) controller.abort();
    }
    clearTimeout(timer);
    outcomes.set(r.id, { tokens, logprobs, finishReason });
  };
  await Promise.all(requests.map(one));
  return outcomes;
}

/** Outputs agree up to their first difference, which must fall where the reference's top tokens nearly tie. */
function expectConsistent(got: number[], reference: Outcome, id: string): 'same' | 'near-tie' {
  for (let i = 0; i < got.length; i++) {
    if (got[i] === reference.tokens[i]) continue;
    const top = reference.logprobs[i]?.top ?? [];
    const chosen = top.find((t) => t.tokenId === got[i]);
    expect(chosen, `${id}: token ${i} (${got[i]}) is not among the reference's top tokens`).toBeDefined();
    expect(top[0].logprob - chosen!.logprob, `${id}: token ${i} diverges at no near-tie`).toBeLessThan(
      NEAR_TIE,
    );
    return 'near-tie';
  }
  return 'same';
}

/** The chaos engine: a pool of `numSlots`, swap preemption into a host tier as large, swaps counted. */
async function chaosEngine(numSlots: number, counts: { swapOut: number; swapIn: number }) {
  const kv = capturedKvCache();
  const engine = await createEngine(
    {
      model,
      device: 'cuda',
      maxKvTokens: numSlots,
      preemptionMode: 'swap',
      swapSpaceTokens: numSlots,
      maxNumSeqs: 64,
      maxNumBatchedTokens: 256,
    },
    {
      backends: [countingCuda(counts)],
      kvCacheManager: kv.factory,
    },
  );
  return { engine, kv: kv.manager() };
}

/** Every request ended once, as asked (all its tokens, or aborted early), consistent with the reference. */
function checkOutcomes(
  requests: readonly ChaosRequest[],
  outcomes: ReadonlyMap<string, Outcome>,
  reference: ReadonlyMap<string, Outcome>,
) {
  const tally = { same: 0, 'near-tie': 0, aborted: 0 };
  for (const r of requests) {
    const got = outcomes.get(r.id);
    expect(got, `${r.id} never ended`).toBeDefined();
    const ref = reference.get(r.id)!;
    expect(ref.finishReason).toBe('length');
    expect(ref.tokens).toHaveLength(r.maxTokens);
    if (got!.finishReason === 'abort') {
      tally.aborted++;
      expect(r.abortAfterChunks !== undefined || r.abortAfterMs !== undefined).toBe(true);
      expect(got!.tokens.length).toBeLessThan(r.maxTokens);
    } else {
      expect(got!.finishReason).toBe('length');
      expect(got!.tokens).toHaveLength(r.maxTokens);
    }
    tally[expectConsistent(got!.tokens, ref, r.id)]++;
  }
  return tally;
}

describe.skipIf(!probe.available)(
  `engine on cuda: chaos at 90% KV pressure with swap preemption and aborts${probe.available ? '' : ` (skipped: ${probe.reason})`}`,
  () => {
    it('loses no request, matches an unpressured run and leaves the pool whole', async () => {
      const requests = workload(2024);
      const referenceEngine = await createEngine({ model, device: 'cuda', maxKvTokens: 16_384 });
      const reference = await play(referenceEngine, requests, { chaos: false, logprobs: 3 });
      await referenceEngine.shutdown();

      const need = requests.reduce((sum, r) => sum + r.prompt.length + r.maxTokens, 0);
      const longest = Math.max(...requests.map((r) => r.prompt.length + r.maxTokens));
      const numSlots = Math.max(longest + 8, Math.round(need * (1 - PRESSURE)));
      const counts = { swapOut: 0, swapIn: 0 };
      const { engine, kv } = await chaosEngine(numSlots, counts);
      let peakUsage = 0;
      const outcomes = await play(engine, requests, {
        chaos: true,
        logprobs: null,
        onChunk: () => {
          peakUsage = Math.max(peakUsage, engine.metrics().kvCacheUsage);
        },
      });
      const tally = checkOutcomes(requests, outcomes, reference);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const status = engine.status();
      const metrics = engine.metrics();
      console.log(
        `gpu chaos: ${JSON.stringify(tally)}, ${numSlots} slots for ${need} tokens, peak KV use ${peakUsage.toFixed(3)}, ` +
          `${metrics.numPreemptionsTotal} preemptions, ${counts.swapOut} swap-outs, ${counts.swapIn} swap-ins, ` +
          `pool ${status.numFreeKvSlots}/${status.numKvSlots} free`,
      );
      expect(tally.aborted).toBeGreaterThan(0);
      expect(peakUsage).toBeGreaterThanOrEqual(0.9);
      expect(metrics.numPreemptionsTotal).toBeGreaterThan(0);
      expect(Math.min(counts.swapOut, counts.swapIn)).toBeGreaterThan(0);
      expect(metrics.requestSuccessTotal.error).toBe(0);
      expect(status.numRunning + status.numWaiting).toBe(0);
      expect(status.numFreeKvSlots).toBe(status.numKvSlots);
      kv.checkIntegrity();
      expect(kv.stats().numFreeHostSlots).toBe(kv.stats().numHostSlots);
      await engine.shutdown();
    }, 180_000);
  },
);
