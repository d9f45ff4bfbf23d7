import type { FerrumEngine } from '@ferrum/engine';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../src/index.js';
import { postSse } from './helpers/sse-reader.js';
import {
  createTinyEngine,
  TINY_MODEL_NAME as MODEL,
  slowSteps,
  TINY_MODEL_DIR,
} from './helpers/tiny-model.js';

/** The parsed JSON events of a finished stream, and whether it ended with `[DONE]`. */
function parseEvents(events: string[]) {
  const done = events.at(-1) === '[DONE]';
  return { done, chunks: events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e)) };
}

describe('graceful shutdown of the server (CPU runtime, tiny Qwen3)', () => {
  let tokenizer: HfTokenizer;
  let engine: FerrumEngine;
  let server: RunningServer;
  beforeEach(async () => {
    tokenizer = (await loadTokenizer(TINY_MODEL_DIR))!;
    // Prompts with 'slowly' take 5 ms a step, so such a request outlives a short drain timeout.
    engine = await createTinyEngine({ maxModelLen: 512, maxKvTokens: 4096 }, [
      slowSteps(tokenizer, 'slowly', 5),
    ]);
    server = await startServer(engine, { host: '127.0.0.1', port: 0 });
  });
  afterEach(async () => {
    await server.close();
    await engine.shutdown();
    await tokenizer.dispose();
  });

  const slowChat = (url: string) =>
    postSse(`${url}/v1/chat/completions`, {
      model: MODEL,
      messages: [{ role: 'user', content: 'tell it slowly' }],
      max_tokens: 400,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    });

  it('refuses new requests, then aborts what outlives the timeout: every stream ends with a final chunk and [DONE]', async () => {
    const slow = await slowChat(server.url);
    expect(slow.status).toBe(200);
    expect(await slow.next()).toContain('"role":"assistant"');
    const slowCompletion = await postSse(`${server.url}/v1/completions`, {
      model: MODEL,
      prompt: 'slowly, please',
      max_tokens: 400,
      ignore_eos: true,
      stream: true,
    });
    expect(await slowCompletion.next()).toContain('"text_completion"');

    const shutdown = server.shutdown({ timeoutMs: 300 });
    const refused = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'too late', max_tokens: 2 }),
    });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      error: {
        message: 'the server is shutting down',
        type: 'server_error',
        param: null,
        code: 'server_shutting_down',
      },
    });
    expect((await fetch(`${server.url}/health`)).status).toBe(503);

    const chat = parseEvents(await slow.rest());
    const completion = parseEvents(await slowCompletion.rest());
    await shutdown;
    expect(chat.done).toBe(true);
    const finals = chat.chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finals.map((c) => c.choices[0].finish_reason)).toEqual(['abort']);
    // The usage chunk still follows, as for any stream that asked for it.
    expect(chat.chunks.at(-1).usage.completion_tokens).toBeLessThan(400);
    expect(completion.done).toBe(true);
    expect(completion.chunks.at(-1).choices[0].finish_reason).toBe('abort');
    expect(engine.status().numRunning + engine.status().numWaiting).toBe(0);
    expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
  });

  it('lets requests that finish within the timeout end normally, then closes', async () => {
    const short = await postSse(`${server.url}/v1/completions`, {
      model: MODEL,
      prompt: 'Once upon a time',
      max_tokens: 8,
      ignore_eos: true,
      stream: true,
    });
    expect(short.status).toBe(200);
    // A timeout far longer than the test's own: the shutdown must resolve as soon as the stream ends.
    await server.shutdown({ timeoutMs: 120_000 });
    const { done, chunks } = parseEvents(await short.rest());
    expect(done).toBe(true);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('length');
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  it('closes at once when nothing is open', async () => {
    await server.shutdown({ timeoutMs: 120_000 });
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });
});
