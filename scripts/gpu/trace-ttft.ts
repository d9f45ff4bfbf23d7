// Where an engine TTFT goes on the CUDA runtime (dummy-weight model): for each request, the time from
// generate() to the runtime's forward() call (engine work before the step), forward() call to its result
// (the runtime's wall time, next to the GPU time the runtime measured for the step), and result to the
// first streamed chunk (engine work after it). Runs 512-token prompts and the agent workload's turns
// (a 2,000-token system prompt shared by turns of 64 new tokens).
//   usage: tsx scripts/gpu/trace-ttft.ts <config.json> <out.json>
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createEngine, warmUp } from '../../packages/engine/src/index.js';
import type { ComputeBackend, ModelExecutor } from '../../packages/interfaces/src/index.js';
import { loadModelConfig } from '../../packages/models/src/index.js';
import { createCudaBackend } from '../../packages/runtime-cuda/src/index.js';
import { randomPrompts, speedEngineOptions } from './engine-setup.js';

const [configFile, outFile] = process.argv.slice(2);
const dir = mkdtempSync(path.join(os.tmpdir(), 'ferrum-trace-'));
copyFileSync(configFile, path.join(dir, 'config.json'));

interface Forward {
  tokens: number;
  calledMs: number;
  settledMs: number;
  gpuMs: number;
}
const forwards: Forward[] = [];

/** The CUDA backend with each forward's call and settle times recorded. */
function tracedCuda(): ComputeBackend {
  const cuda = createCudaBackend();
  return {
    specificationVersion: 'v1',
    name: 'cuda',
    probe: () => cuda.probe(),
    async loadModel(spec) {
      const inner: ModelExecutor = await cuda.loadModel(spec);
      const gpuSeconds = () =>
        (inner as unknown as { memory(): { gpuStepSeconds: number } }).memory().gpuStepSeconds;
      return {
        info: inner.info,
        kv: inner.kv,
        async forward(batch) {
          const record: Forward = {
            tokens: batch.tokenIds.length,
            calledMs: performance.now(),
            settledMs: 0,
            gpuMs: 0,
          };
          forwards.push(record);
          const gpuBefore = gpuSeconds();
          const result = await inner.forward(batch);
          record.settledMs = performance.now();
          // With a step launched early this also counts that step's GPU time: read it for first steps only.
          record.gpuMs = (gpuSeconds() - gpuBefore) * 1e3;
          return result;
        },
        dispose: () => inner.dispose(),
      };
    },
  };
}

const config = await loadModelConfig(dir);
const engine = await createEngine(speedEngineOptions(dir, 64 * 1024), {
  backends: [tracedCuda()],
  tokenizer: null,
});
await warmUp(engine); // as `ferrum serve` does before it listens
const randomPrompt = randomPrompts(config.vocabSize);

interface Trace {
  label: string;
  ttftMs: number;
  beforeForwardMs: number;
  forwardMs: number;
  forwardGpuMs: number;
  afterForwardMs: number;
}
const traces: Trace[] = [];

async function traced(label: string, prompt: number[], maxTokens: number): Promise<void> {
  const first = forwards.length;
  const t0 = performance.now();
  let chunkMs = 0;
  const stream = engine.generate({
    prompt: { tokenIds: prompt },
    sampling: { temperature: 0, maxTokens, ignoreEos: true },
  });
  for await (const chunk of stream) {
    if (chunk.tokenIds.length > 0 && chunkMs === 0) chunkMs = performance.now();
  }
  const step = forwards[first];
  traces.push({
    label,
    ttftMs: chunkMs - t0,
    beforeForwardMs: step.calledMs - t0,
    forwardMs: step.settledMs - step.calledMs,
    forwardGpuMs: step.gpuMs,
    afterForwardMs: chunkMs - step.settledMs,
  });
}

for (let i = 0; i < 8; i++) await traced('warm-up', randomPrompt(512), 8);
for (let i = 0; i < 6; i++) await traced('512-token prompt, 1 token', randomPrompt(512), 1);
const system = randomPrompt(2000);
for (let turn = 0; turn < 10; turn++)
  await traced(`agent turn ${turn + 1}`, [...system, ...randomPrompt(64)], 8);
await engine.shutdown();

writeFileSync(outFile, JSON.stringify(traces, null, 2));
const f = (v: number) => v.toFixed(2);
console.log('| request | TTFT ms | engine before step | step wall | step GPU | engine after step |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const t of traces.filter((x) => x.label !== 'warm-up')) {
  console.log(
    `| ${t.label} | ${f(t.ttftMs)} | ${f(t.beforeForwardMs)} | ${f(t.forwardMs)} | ${f(t.forwardGpuMs)} | ${f(t.afterForwardMs)} |`,
  );
}
