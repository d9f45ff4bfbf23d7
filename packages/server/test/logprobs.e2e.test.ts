import type { FerrumEngine } from '@ferrum/engine';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForTest, type TestServer, withExtras } from './helpers/serve.js';
import {
  createTinyEngine,
  TINY_MODEL_NAME as MODEL,
  scriptedOutput,
  TINY_MODEL_DIR,
} from './helpers/tiny-model.js';

describe('logprobs in responses on the CPU runtime (tiny Qwen3)', () => {
  let engine: FerrumEngine;
  let tokenizer: HfTokenizer;
  let t: TestServer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(TINY_MODEL_DIR))!;
    engine = await createTinyEngine({ maxModelLen: 256, maxKvTokens: 4096 }, [
      scriptedOutput(tokenizer, 'greet', 'Hello world, café 🙂 done'),
    ]);
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

  it('reports each token as the text it adds (spaces and split characters included), bytes as its UTF-8', async () => {
    const eosText = tokenizer.decode([tokenizer.eosTokenIds[0]], { skipSpecialTokens: false });
    const request = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'greet me' }],
      max_tokens: 60,
      logprobs: true,
      top_logprobs: 2,
    };
    const res = await t.client.chat.completions.create(request);
    const content = res.choices[0].message.content;
    expect(content).toBe('Hello world, café 🙂 done');
    const entries = res.choices[0].logprobs!.content!;
    // The scripted reply ends with EOS, whose logprob is reported too (with its text, as vLLM does).
    expect(entries.map((e) => e.token).join('')).toBe(content + eosText);
    // The fixture's small vocabulary has " w" but no " world".
    expect(entries.map((e) => e.token)).toContain(' w');
    expect(Buffer.from(entries.flatMap((e) => e.bytes!))).toEqual(Buffer.from(content + eosText));
    for (const entry of entries) {
      expect(entry.token).not.toContain('\uFFFD');
      for (const top of entry.top_logprobs) expect(top.bytes).toEqual([...Buffer.from(top.token)]);
    }
    const stream = await t.client.chat.completions.create({ ...request, stream: true });
    const streamed = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(entries);

    const completion = await t.client.completions.create({
      model: MODEL,
      prompt: 'greet',
      max_tokens: 60,
      logprobs: 1,
    });
    const lp = completion.choices[0].logprobs!;
    expect(completion.choices[0].text).toBe('Hello world, café 🙂 done');
    expect(lp.tokens!.join('')).toBe(completion.choices[0].text + eosText);
    // Offsets in characters (code points), as vLLM: the emoji counts once, not as two UTF-16 units.
    const offsets = lp.tokens!.map((_, i) => [...lp.tokens!.slice(0, i).join('')].length);
    expect(lp.text_offset).toEqual(offsets);
  });
});
