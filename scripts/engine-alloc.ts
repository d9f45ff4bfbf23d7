// What the engine's host thread allocates per steady decode step, and how often V8 scavenges because of
// it (issue 7: young-generation pauses spike the inter-token latency tail).
//
// The real engine (scheduler, KV manager, step loop and runner, output processing with the fixture's
// tokenizer, streams read by `for await`) runs on the CPU against a stand-in runtime that answers each
// forward on the next turn of the event loop (setImmediate), with greedy tokens it "sampled on the
// device" and CUDA's capabilities (every sampling op on the device, `previousTokens`, so steps launch
// early). The stand-in allocates one Promise and one Immediate per forward; nothing else.
//
// Workload: CONCURRENCY streams (default 8) of 512 prompt / 1,500 output tokens, greedy, ignoring EOS.
// A warm-up run, then a measured run whose window is decode steps [200, 1,200) of the steady part
// (every stream decoding one token). Three child processes measure the same window:
// - bytes: `gc()` at the window's start, V8's used heap at its end, with a 256 MiB young generation so no
//   collection runs in between (checked); bytes per decode step;
// - gc: default heap settings; scavenges (and mark-compacts) in the windows of five measured runs, per
//   1,000 decode steps;
// - profile: V8's sampling heap profiler (64-byte interval, collected objects included), allocation sites
//   ranked by bytes per decode step.
//
// Run: node --import "$(pwd)/packages/engine/node_modules/tsx/dist/esm/index.mjs" \
//        --conditions=@ferrum/source scripts/engine-alloc.ts [concurrency] [--json out.json]
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dirname, resolve } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { runGreedyStreams } from '../packages/engine/bench/greedy-streams.js';
import { createEngine } from '../packages/engine/src/index.js';
import type { ComputeBackend, ModelExecutor } from '../packages/interfaces/src/index.js';
import { createCpuBackend } from '../packages/runtime-cpu/src/index.js';
import {
  DEVICE_SAMPLING_OPS,
  type ForwardBatch,
  type ForwardResult,
  seededRandom,
} from '../packages/types/src/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = resolve(ROOT, 'fixtures/tiny-models/qwen3-qknorm');
const PROMPT_TOKENS = 512;
const OUTPUT_TOKENS = 1500;
const WINDOW_START = 200;
const WINDOW_STEPS = 1000;
/** Measured runs of the gc mode. */
const GC_RUNS = 5;

type Mode = 'bytes' | 'gc' | 'profile';

/** Marks the measured window from inside the stand-in runtime, at the same point of every step. */
interface Probe {
  onWindowStart(): void;
  onWindowEnd(): void;
}

/**
 * The CPU backend's model description and KV storage, with a forward that samples pseudo-random tokens
 * "on the device" and settles on the next turn of the event loop. Results alternate between two
 * preallocated records (the engine copies the tokens out before the next-but-one forward).
 */
function standInBackend(concurrency: number, probe: Probe | null): ComputeBackend {
  const cpu = createCpuBackend();
  return {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: async () => ({
      ...(await cpu.probe()),
      deviceSampling: DEVICE_SAMPLING_OPS,
      previousTokens: true,
    }),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      const vocab = inner.info.config.vocabSize;
      const capacity = inner.info.maxBatchTokens;
      const results: ForwardResult[] = [
        { tokens: new Int32Array(capacity), logprobs: new Float32Array(capacity) },
        { tokens: new Int32Array(capacity), logprobs: new Float32Array(capacity) },
      ];
      let turn = 0;
      const random = seededRandom(1);
      let numDecodeSteps = 0;
      return {
        info: inner.info,
        kv: inner.kv,
        forward(batch: ForwardBatch): Promise<ForwardResult> {
          if (batch.numSeqs === concurrency && batch.numTokens === concurrency) {
            numDecodeSteps++;
            if (numDecodeSteps === WINDOW_START) probe?.onWindowStart();
            if (numDecodeSteps === WINDOW_START + WINDOW_STEPS) probe?.onWindowEnd();
          }
          const result = results[turn];
          turn = 1 - turn;
          for (let i = 0; i < batch.sampleRows.length; i++) {
            result.tokens[i] = 5 + Math.floor(random() * (vocab - 5));
          }
          return new Promise((settle) => setImmediate(settle, result));
        },
        dispose: () => inner.dispose(),
      };
    },
  };
}

async function runWorkload(concurrency: number, probe: Probe | null): Promise<void> {
  const engine = await createEngine(
    {
      model: MODEL,
      maxKvTokens: concurrency * (PROMPT_TOKENS + OUTPUT_TOKENS) + 1024,
      maxNumSeqs: concurrency,
      maxNumBatchedTokens: 2048,
    },
    { backends: [standInBackend(concurrency, probe)] },
  );
  await runGreedyStreams(engine, concurrency, PROMPT_TOKENS, OUTPUT_TOKENS);
  await engine.shutdown();
}

/** Young-generation (scavenge) and full (mark-compact) collections whose start lies in the window. */
class GcCounter {
  private readonly entries: { readonly kind: number; readonly startMs: number; readonly ms: number }[] = [];
  private readonly observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind: number } }).detail?.kind ?? 0;
      this.entries.push({ kind, startMs: e.startTime, ms: e.duration });
    }
  });

  start(): void {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  async stop(): Promise<void> {
    // Entries are delivered asynchronously.
    await new Promise((done) => setTimeout(done, 50));
    this.observer.disconnect();
  }

  within(fromMs: number, toMs: number, kind: number) {
    const hits = this.entries.filter((e) => e.kind === kind && e.startMs >= fromMs && e.startMs < toMs);
    return {
      count: hits.length,
      maxMs: round(Math.max(0, ...hits.map((e) => e.ms))),
      totalMs: round(hits.reduce((sum, e) => sum + e.ms, 0)),
    };
  }
}

async function measureBytes(concurrency: number) {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('bytes mode needs --expose-gc');
  const counter = new GcCounter();
  let startHeap = 0;
  let endHeap = 0;
  let startMs = 0;
  let endMs = 0;
  await runWorkload(concurrency, null);
  counter.start();
  await runWorkload(concurrency, {
    onWindowStart() {
      gc();
      startMs = performance.now();
      startHeap = v8.getHeapStatistics().used_heap_size;
    },
    onWindowEnd() {
      endHeap = v8.getHeapStatistics().used_heap_size;
      endMs = performance.now();
    },
  });
  await counter.stop();
  const collections =
    counter.within(startMs, endMs, constants.NODE_PERFORMANCE_GC_MINOR).count +
    counter.within(startMs, endMs, constants.NODE_PERFORMANCE_GC_MAJOR).count;
  return {
    bytesPerDecodeStep: Math.round((endHeap - startHeap) / WINDOW_STEPS),
    collectionsInWindow: collections,
    valid: collections === 0,
  };
}

async function measureGc(concurrency: number) {
  const counter = new GcCounter();
  const windows: { startMs: number; endMs: number }[] = [];
  await runWorkload(concurrency, null);
  counter.start();
  // A window sees only a few scavenges: count over several.
  for (let i = 0; i < GC_RUNS; i++) {
    const window = { startMs: 0, endMs: 0 };
    windows.push(window);
    await runWorkload(concurrency, {
      onWindowStart: () => {
        window.startMs = performance.now();
      },
      onWindowEnd: () => {
        window.endMs = performance.now();
      },
    });
  }
  await counter.stop();
  const count = (kind: number) => windows.map((w) => counter.within(w.startMs, w.endMs, kind));
  const scavenges = count(constants.NODE_PERFORMANCE_GC_MINOR);
  const markCompacts = count(constants.NODE_PERFORMANCE_GC_MAJOR);
  const per1000 = (hits: { count: number }[]) =>
    round((hits.reduce((sum, h) => sum + h.count, 0) * 1000) / (GC_RUNS * WINDOW_STEPS));
  return {
    decodeSteps: GC_RUNS * WINDOW_STEPS,
    scavengesPer1000Steps: per1000(scavenges),
    scavengeMaxMs: Math.max(...scavenges.map((h) => h.maxMs)),
    markCompactsPer1000Steps: per1000(markCompacts),
    markCompactMaxMs: Math.max(...markCompacts.map((h) => h.maxMs)),
  };
}

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}

async function measureProfile(concurrency: number) {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  let started: Promise<unknown> = Promise.resolve();
  let stopped: Promise<{ profile: { head: ProfileNode } }> | null = null;
  await runWorkload(concurrency, null);
  await runWorkload(concurrency, {
    onWindowStart() {
      started = session.post('HeapProfiler.startSampling', {
        samplingInterval: 64,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    },
    onWindowEnd() {
      stopped = started.then(
        () => session.post('HeapProfiler.stopSampling') as Promise<{ profile: { head: ProfileNode } }>,
      );
    },
  });
  const { profile } = await stopped!;
  session.disconnect();
  const bySite = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  // A builtin (subarray, Promise, ...) is named with the closest script function that called it, and a
  // site's area is the package (or this script: stand-in runtime and stream consumers) of the closest
  // repository file on the stack.
  const visit = (node: ProfileNode, caller: string, callerArea: string) => {
    const { functionName, url } = node.callFrame;
    const inRepo = url.startsWith(`file://${ROOT}/`);
    const file = inRepo ? url.slice(`file://${ROOT}/`.length) : url;
    const name = functionName || '(anonymous)';
    const site = file === '' ? `${name} <- ${caller}` : `${name} ${file}`;
    const area = inRepo
      ? file
          .split('/')
          .slice(0, file.startsWith('packages/') ? 2 : 1)
          .join('/')
      : callerArea;
    if (node.selfSize > 0) {
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      byArea.set(area, (byArea.get(area) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) visit(child, file === '' ? caller : site, area);
  };
  visit(profile.head, '(root)', 'node (event loop, timers, inspector)');
  const perStep = (entries: Map<string, number>, limit: number) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([key, bytes]) => [key, Math.round(bytes / WINDOW_STEPS)] as const);
  const sites = perStep(bySite, 25).map(([site, bytes]) => ({ site, bytesPerDecodeStep: bytes }));
  const areas = perStep(byArea, 20).map(([area, bytes]) => ({ area, bytesPerDecodeStep: bytes }));
  return { sampledBytesPerDecodeStep: Math.round(total / WINDOW_STEPS), areas, sites };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

const CHILD_FLAGS: Readonly<Record<Mode, readonly string[]>> = {
  bytes: ['--expose-gc', '--min-semi-space-size=256', '--max-semi-space-size=256'],
  gc: [],
  profile: [],
};

const args = process.argv.slice(2);
const child = args.indexOf('--child');
const concurrency = Number(args.find((a) => /^\d+$/.test(a)) ?? 8);
if (child >= 0) {
  const mode = args[child + 1] as Mode;
  const measure = { bytes: measureBytes, gc: measureGc, profile: measureProfile }[mode];
  process.stdout.write(JSON.stringify(await measure(concurrency)));
} else {
  const run = (mode: Mode) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [
          ...process.execArgv,
          ...CHILD_FLAGS[mode],
          fileURLToPath(import.meta.url),
          String(concurrency),
          '--child',
          mode,
        ],
        { encoding: 'utf8', maxBuffer: 1 << 24 },
      ),
    );
  const result = {
    concurrency,
    promptTokens: PROMPT_TOKENS,
    outputTokens: OUTPUT_TOKENS,
    window: { firstDecodeStep: WINDOW_START, decodeSteps: WINDOW_STEPS },
    node: process.version,
    bytes: run('bytes'),
    gc: run('gc'),
    profile: run('profile'),
  };
  console.log(
    `c${concurrency}: ${result.bytes.bytesPerDecodeStep} B/decode step` +
      `${result.bytes.valid ? '' : ' (INVALID: a collection ran in the window)'}, ` +
      `${result.gc.scavengesPer1000Steps} scavenges/1,000 steps (max ${result.gc.scavengeMaxMs} ms), ` +
      `${result.gc.markCompactsPer1000Steps} mark-compacts/1,000 steps; ` +
      `sampled ${result.profile.sampledBytesPerDecodeStep} B/step`,
  );
  console.table(result.profile.areas);
  console.table(result.profile.sites);
  const json = args.indexOf('--json');
  if (json >= 0) writeFileSync(args[json + 1], `${JSON.stringify(result, null, 2)}\n`);
}
