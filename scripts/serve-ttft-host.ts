// The server's share of a TTFT (issue 7): `ferrum serve`'s HTTP path (Fastify, the completions route, SSE)
// around the real engine on the CPU, against the stand-in runtime of `stand-in-backend.ts`, with the load
// generator in a child process as `ferrum bench serve` runs it. Sequential streaming completions of random
// token-id prompts, 8 tokens out; medians after 5 warm-up requests, in ms:
// - send → request: from the client's call to the server's `request` event (client work, loopback, HTTP parse);
// - request → generate: body read, JSON parse, schema validation, the route, to `engine.generate()`;
// - generate → forward: the engine's work before the step (as `engine-ttft-host.ts` reads it);
// - step: the stand-in's forward;
// - result → token: from the step's result to the client holding the first token (the engine's work after
//   the step, the server's event, the socket, the client's parse).
// `--client http` is `ferrum bench serve`'s own client (`StreamClient`, Node's http); `--client fetch` reads the
// same stream through `fetch`, as the OpenAI Node client does; `--client chat` sends an agent's turns through
// `fetch` as streaming chat completions: a fixed system prompt of ~2,000 words and a new 50-word user message
// each turn, which the server renders and tokenizes (give `--model` a directory with a real tokenizer and a
// config; the stand-in reads no weights). Stamps of the two processes share the Unix epoch's scale (`epochMs`).
// `--device cuda` runs the real CUDA runtime on dummy weights of `--model` instead of the stand-in (on the GPU
// machine); the columns after `engine.generate()` are then one: generate → token.
//
// Run: node --import "$(pwd)/packages/engine/node_modules/tsx/dist/esm/index.mjs" --conditions=@ferrum/source \
//        scripts/serve-ttft-host.ts [--step-ms 5] [--wait timer] [--requests 60] [--prompt-len 512] \
//        [--client http,fetch,chat] [--rounds 1] [--model DIR] [--device cuda]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { StreamClient } from '../packages/cli/src/bench/stream-request.js';
import { createEngine } from '../packages/engine/src/index.js';
import { startServer } from '../packages/server/src/index.js';
import { seededRandom } from '../packages/types/src/index.js';
import { speedEngineOptions } from './gpu/engine-setup.js';
import {
  epochMs,
  type ForwardTimes,
  type StepWait,
  standInBackend,
  standInModelDir,
} from './stand-in-backend.js';

const { values } = parseArgs({
  options: {
    'step-ms': { type: 'string', default: '5' },
    wait: { type: 'string', default: 'timer' },
    requests: { type: 'string', default: '60' },
    'prompt-len': { type: 'string', default: '512' },
    client: { type: 'string', default: 'http,fetch' },
    rounds: { type: 'string', default: '1' },
    model: { type: 'string' },
    device: { type: 'string' },
    // Internal: run as the load generator against this URL.
    'client-of': { type: 'string' },
  },
});
const numRequests = Number(values.requests);
const promptLen = Number(values['prompt-len']);
const WARM_UP = 5;
const MODEL = 'stand-in';

/** [sent, first token received] per request, epoch ms. */
type ClientRow = [number, number];

async function runClient(url: string, mode: string): Promise<ClientRow[]> {
  const random = seededRandom(1);
  const target = { baseUrl: url, model: MODEL, outputLen: 8, temperature: 0, ignoreEos: true };
  const client = new StreamClient(target);
  const rows: ClientRow[] = [];
  const system = words(seededRandom(2), 2000);
  for (let i = 0; i < numRequests; i++) {
    const tokenIds = Array.from({ length: promptLen }, () => 5 + Math.floor(random() * 400));
    const sentMs = epochMs();
    if (mode === 'chat') {
      rows.push([sentMs, await firstTokenOfChat(url, system, words(random, 50))]);
    } else if (mode === 'fetch') {
      rows.push([sentMs, await firstTokenByFetch(url, tokenIds)]);
    } else {
      const result = await client.stream({ tokenIds });
      if (!result.ok) throw new Error(result.error);
      rows.push([sentMs, sentMs + result.ttftMs]);
    }
  }
  client.close();
  return rows;
}

const WORDS = 'the quick brown fox jumps over a lazy dog while seven bakers sing of summer rain'.split(' ');

function words(random: () => number, count: number): string {
  return Array.from({ length: count }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
}

/** The epoch time at which `fetch` delivers the first event that carries text. */
function firstTokenByFetch(url: string, tokenIds: number[]): Promise<number> {
  const body = {
    model: MODEL,
    prompt: tokenIds,
    max_tokens: 8,
    temperature: 0,
    ignore_eos: true,
    stream: true,
  };
  return firstEventWith(`${url}/v1/completions`, body, '"text"');
}

/** The same for an agent's turn sent as a streaming chat completion. */
function firstTokenOfChat(url: string, system: string, user: string): Promise<number> {
  const messages = [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
  const body = { model: MODEL, messages, max_tokens: 8, temperature: 0, ignore_eos: true, stream: true };
  return firstEventWith(`${url}/v1/chat/completions`, body, '"content"');
}

async function firstEventWith(url: string, body: unknown, marker: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const decoder = new TextDecoder();
  let firstMs = 0;
  for await (const bytes of res.body ?? []) {
    if (firstMs === 0 && decoder.decode(bytes, { stream: true }).includes(marker)) firstMs = epochMs();
  }
  return firstMs;
}

function clientProcess(url: string, mode: string): Promise<ClientRow[]> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  args.push('--client-of', url, '--client', mode);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`client: ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const wait = values.wait as StepWait;
  if (!['poll', 'busy', 'timer'].includes(wait)) throw new Error('--wait must be poll, busy or timer');
  const forwards: ForwardTimes[] = [];
  const onCuda = values.device === 'cuda';
  if (onCuda && !values.model) throw new Error('--device cuda needs --model');
  const engine = onCuda
    ? await createEngine({ ...speedEngineOptions(values.model as string, 64 * 1024), servedModelName: MODEL })
    : await createEngine(
        {
          model: values.model ?? standInModelDir(),
          loadFormat: 'dummy',
          servedModelName: MODEL,
          maxKvTokens: 64 * 1024,
          maxModelLen: 8192,
        },
        { backends: [standInBackend(Number(values['step-ms']), wait, forwards)] },
      );
  const requestMs: number[] = [];
  const generateMs: number[] = [];
  const generate = engine.generate.bind(engine);
  engine.generate = (request, options) => {
    generateMs.push(epochMs());
    return generate(request, options);
  };
  const server = await startServer(engine, { port: 0 });
  server.app.server.prependListener('request', () => requestMs.push(epochMs()));

  const columns = onCuda ? ['generate → token'] : ['generate → forward', 'step', 'result → token'];
  console.log(`| client | TTFT | send → request | request → generate | ${columns.join(' | ')} |`);
  console.log(`|${' --- |'.repeat(4 + columns.length)}`);
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)].toFixed(3);
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const mode of values.client.split(',')) {
      const first = requestMs.length;
      const rows = await clientProcess(server.url, mode);
      const phases = rows.slice(WARM_UP).map(([sentMs, tokenMs], k) => {
        const i = first + WARM_UP + k;
        const shared = [tokenMs - sentMs, requestMs[i] - sentMs, generateMs[i] - requestMs[i]];
        if (onCuda) return [...shared, tokenMs - generateMs[i]];
        // A request's first forward: the first one called after its generate().
        const step = forwards.find((f) => f.calledMs >= generateMs[i]) as ForwardTimes;
        return [
          ...shared,
          step.calledMs - generateMs[i],
          step.settledMs - step.calledMs,
          tokenMs - step.settledMs,
        ];
      });
      const cells = phases[0].map((_, c) => median(phases.map((p) => p[c])));
      console.log(`| ${mode} | ${cells.join(' | ')} |`);
    }
  }
  await server.close();
  await engine.shutdown();
}

if (values['client-of']) {
  process.stdout.write(JSON.stringify(await runClient(values['client-of'], values.client)));
} else {
  await main();
}
