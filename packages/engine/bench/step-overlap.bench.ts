/**
 * How much of the engine's JS work per step async scheduling hides behind the forward. The runtime is
 * simulated: forwards run one after another in call order on a simulated device, each FORWARD_MS long
 * on a timer (the event loop stays free, as with a native step), and return pseudo-random token ids, so
 * everything else is the real engine: scheduler, KV manager, StepRunner, detokenization of the fixture's
 * tokenizer, and streaming to consumers.
 *
 * Three loops: plain (no async scheduling), async (N + 1 planned while N runs, launched after complete(N))
 * and early (the simulated runtime reports `previousTokens`, so N + 1 is launched before N resolves).
 * Per decode step it reports the JS time (event-loop busy time, from `eventLoopUtilization`), the period
 * (one step's device start to the next one's) and the device's idle gap (a step's end to the next one's
 * start): plain holds all of the JS work (complete, stream, schedule) in the gap, async only `complete()`
 * and the launch, early nothing while the engine keeps up.
 *
 * Run: `packages/scheduler/node_modules/.bin/tsx --conditions=@ferrum/source packages/engine/bench/step-overlap.bench.ts`
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@ferrum/engine';
import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import { type ForwardBatch, type ForwardResult, seededRandom } from '@ferrum/types';
import { runGreedyStreams } from './greedy-streams.js';

const FORWARD_MS = 5;
const PROMPT_TOKENS = 128;
const OUTPUT_TOKENS = 128;
const MODEL = resolve(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/tiny-models/qwen3-qknorm');

type Loop = 'plain' | 'async' | 'early';

interface ForwardTimes {
  readonly numSeqs: number;
  readonly numTokens: number;
  /** Event-loop busy time so far (ms), at the call. */
  readonly activeMs: number;
  /** When the simulated device started the step (its call, or the end of the step before) and ended it. */
  startMs: number;
  endMs: number;
}

/**
 * The CPU backend's model description and KV storage, with a forward that only occupies a simulated device
 * for FORWARD_MS after the steps called before it. `previousTokens`: report the capability (placeholder rows
 * are ignored, as every token is pseudo-random).
 */
function simulatedBackend(log: ForwardTimes[], previousTokens: boolean): ComputeBackend {
  const cpu = createCpuBackend();
  const random = seededRandom(1);
  let deviceFree: Promise<unknown> = Promise.resolve();
  return {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: async () => ({ ...(await cpu.probe()), deviceSampling: ['greedy'], previousTokens }),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      const vocab = inner.info.config.vocabSize;
      return {
        info: inner.info,
        kv: inner.kv,
        forward(batch: ForwardBatch): Promise<ForwardResult> {
          const entry: ForwardTimes = {
            numSeqs: batch.numSeqs,
            numTokens: batch.numTokens,
            activeMs: performance.eventLoopUtilization().active,
            startMs: 0,
            endMs: 0,
          };
          log.push(entry);
          const tokens = new Int32Array(batch.sampleRows.length);
          for (let i = 0; i < tokens.length; i++) tokens[i] = 5 + Math.floor(random() * (vocab - 5));
          const result = deviceFree.then(async () => {
            entry.startMs = now();
            await new Promise((done) => setTimeout(done, FORWARD_MS));
            entry.endMs = now();
            return { tokens };
          });
          deviceFree = result;
          return result;
        },
        dispose: () => inner.dispose(),
      };
    },
  };
}

function now(): number {
  return performance.now();
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function run(concurrency: number, loop: Loop) {
  const log: ForwardTimes[] = [];
  const engine = await createEngine(
    {
      model: MODEL,
      maxKvTokens: concurrency * (PROMPT_TOKENS + OUTPUT_TOKENS) + 1024,
      maxNumSeqs: concurrency,
      maxNumBatchedTokens: 4096,
      asyncScheduling: loop !== 'plain',
    },
    { backends: [simulatedBackend(log, loop === 'early')] },
  );
  const started = now();
  await runGreedyStreams(engine, concurrency, PROMPT_TOKENS, OUTPUT_TOKENS);
  const elapsedMs = now() - started;
  await engine.shutdown();
  // Steady decode: every sequence decodes one token; the next entry closes the step's period.
  const periods: number[] = [];
  const gaps: number[] = [];
  const busy: number[] = [];
  for (let k = 0; k + 1 < log.length; k++) {
    if (log[k].numTokens !== concurrency || log[k + 1].numTokens !== concurrency) continue;
    periods.push(log[k + 1].startMs - log[k].startMs);
    gaps.push(log[k + 1].startMs - log[k].endMs);
    busy.push(log[k + 1].activeMs - log[k].activeMs);
  }
  return {
    concurrency,
    loop,
    decodeSteps: periods.length,
    jsPerStepP50Ms: round(quantile(busy, 0.5)),
    periodP50Ms: round(quantile(periods, 0.5)),
    idleGapP50Ms: round(quantile(gaps, 0.5)),
    idleGapP99Ms: round(quantile(gaps, 0.99)),
    outputTokensPerS: Math.round((concurrency * OUTPUT_TOKENS) / (elapsedMs / 1000)),
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

const results = [];
for (const concurrency of [64, 256]) {
  for (const loop of ['plain', 'async', 'early'] as const) {
    await run(concurrency, loop); // warm-up
    results.push(await run(concurrency, loop));
  }
}
console.log(`simulated forward: ${FORWARD_MS} ms; prompt ${PROMPT_TOKENS}, output ${OUTPUT_TOKENS} tokens`);
console.table(results);
console.log(JSON.stringify({ forwardMs: FORWARD_MS, results }));
