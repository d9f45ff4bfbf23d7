// The engine's own share of a TTFT (issue 7): the real engine (scheduler, KV manager, step loop and runner,
// output streams) on the CPU against a stand-in runtime (`stand-in-backend.ts`) whose forward() answers after a
// set time, so that the host work between `generate()` and the runtime's `forward()` call ("before"), and
// between the step's result and the first streamed chunk ("after"), can be read without a GPU.
//
// Workload, as `scripts/gpu/trace-ttft.ts`: sequential 512-token prompts, then agent turns (a 2,000-token system
// prompt shared by turns of 64 new tokens, prefix cache on), 8 output tokens each; medians after 5 warm-up
// requests. `--step-ms 0` answers on the next turn of the event loop; a positive value holds each step that long,
// waited for as `--wait` says (`StepWait`).
//
// Run: node --import "$(pwd)/packages/engine/node_modules/tsx/dist/esm/index.mjs" --conditions=@ferrum/source \
//        scripts/engine-ttft-host.ts [--step-ms 0] [--wait poll|busy|timer] [--requests 60]
import { parseArgs } from 'node:util';
import { createEngine } from '../packages/engine/src/index.js';
import { seededRandom } from '../packages/types/src/index.js';
import { epochMs, type ForwardTimes, standInBackend, standInModelDir } from './stand-in-backend.js';

const { values } = parseArgs({
  options: {
    'step-ms': { type: 'string', default: '0' },
    wait: { type: 'string', default: 'poll' },
    requests: { type: 'string', default: '60' },
  },
});
const wait = values.wait;
if (wait !== 'poll' && wait !== 'busy' && wait !== 'timer')
  throw new Error('--wait must be poll, busy or timer');
const stepMs = Number(values['step-ms']);
const numRequests = Number(values.requests);
const WARM_UP = 5;

/** When each forward was called and when it settled. */
const forwards: ForwardTimes[] = [];
const model = standInModelDir();
const engine = await createEngine(
  { model, maxKvTokens: 64 * 1024, maxNumSeqs: 256, maxNumBatchedTokens: 4096, maxModelLen: 8192 },
  { backends: [standInBackend(stepMs, wait, forwards)] },
);

const random = seededRandom(1);
const randomPrompt = (length: number) => Array.from({ length }, () => 5 + Math.floor(random() * 400));

/** [TTFT, before, step, after] in ms of one request. */
async function traced(prompt: number[]): Promise<number[]> {
  const first = forwards.length;
  const t0 = epochMs();
  let chunkMs = 0;
  const stream = engine.generate({
    prompt: { tokenIds: prompt },
    sampling: { temperature: 0, maxTokens: 8, ignoreEos: true },
  });
  for await (const chunk of stream) {
    if (chunk.tokenIds.length > 0 && chunkMs === 0) chunkMs = epochMs();
  }
  const step = forwards[first];
  return [chunkMs - t0, step.calledMs - t0, step.settledMs - step.calledMs, chunkMs - step.settledMs];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(
  `| workload (step ${stepMs} ms, ${wait}) | TTFT ms | engine before step | step | engine after step |`,
);
console.log('| --- | --- | --- | --- | --- |');
const system = randomPrompt(2000);
for (const [label, prompt] of [
  ['512-token prompt', () => randomPrompt(512)],
  ['agent turn', () => [...system, ...randomPrompt(64)]],
] as const) {
  const rows: number[][] = [];
  for (let i = 0; i < numRequests; i++) rows.push(await traced(prompt()));
  const cells = [0, 1, 2, 3].map((k) => median(rows.slice(WARM_UP).map((r) => r[k])).toFixed(3));
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}
await engine.shutdown();
