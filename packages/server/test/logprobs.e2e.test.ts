import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForTest, type TestServer, withExtras } from './helpers/serve.js';
import { scriptedOutput, TINY_MODEL_DIR } from './helpers/tiny-model.js';

const MODEL = 'tiny';

describe('logprobs in responses on the CPU runtime (tiny Qwen3)', () => {
  let engine: FerrumEngine;
  let tokenizer: HfTokenizer;
  let t: TestServer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(TINY_MODEL_DIR))!;
    engine = await createEngine(
      { model: TINY_MODEL_DIR, device: 'cpu', servedModelName: MODEL, maxModelLen: 256, maxKvTokens: 4096 },
      { logitsProcessors: [scriptedOutput(tokenizer, 'greet', 'Hello world, café 🙂 done')] },
    );
    t = await serveForTest(engine, { maxModelLen: 256 });
  });
  afterAll(async () => {
    await t?.server.close();
    await engine?.shutdown();
    await tokenizer?.dispose();
  });

  it('sends logprobs: null on streamed chat chunks that carry no token, as OpenAI does', async () => {
    const stream = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const final = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(final?.choices[0].finish_reason).toBe('length');
    let numTokens = 0;
    for (const chunk of chunks) {
      const logprobs = chunk.choices[0]?.logprobs;
      if (logprobs === undefined) continue;
      // A chunk either reports its tokens or has none to report: never an empty list.
      if (logprobs !== null) expect(logprobs.content?.length).toBeGreaterThan(0);
      numTokens += logprobs?.content?.length ?? 0;
    }
    expect(final?.choices[0].logprobs).toBeNull();
    expect(numTokens).toBe(chunks.at(-1)?.usage?.completion_tokens);
  });

  it('sends logprobs: null on streamed completion chunks that carry no token', async () => {
    const stream = await t.client.completions.create(
      withExtras(
        { model: MODEL, prompt: 'Once', max_tokens: 5, logprobs: 1, stream: true as const },
        { ignore_eos: true },
      ),
    );
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const final = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(final?.choices[0].finish_reason).toBe('length');
    expect(final?.choices[0].logprobs).toBeNull();
    const tokens = chunks.flatMap((c) => c.choices[0]?.logprobs?.tokens ?? []);
    expect(tokens).toHaveLength(5);
  });
});
