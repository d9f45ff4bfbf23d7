import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, serveForTest, type TestServer, withExtras } from './helpers/serve.js';
import {
  createTinyEngine,
  TINY_MODEL_NAME as MODEL,
  readGolden,
  scriptedOutput,
  slowSteps,
  TINY_MODEL_DIR,
} from './helpers/tiny-model.js';

const TOOL_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe('OpenAI client against the server on the CPU runtime (tiny Qwen3)', () => {
  let engine: FerrumEngine;
  let tokenizer: HfTokenizer;
  let t: TestServer;
  const golden = readGolden();
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(TINY_MODEL_DIR))!;
    // Tool-call prompts make the model write a call; 'slowly' prompts take 5 ms a step (abort tests).
    engine = await createTinyEngine({ maxModelLen: 256, maxKvTokens: 8192 }, [
      scriptedOutput(tokenizer, 'weather', TOOL_CALL),
      slowSteps(tokenizer, 'slowly', 5),
    ]);
    // The fixture's ChatML template does not render tools, so the tool-call format is named here.
    t = await serveForTest(engine, { maxModelLen: 256, toolCallParser: 'hermes' });
  });
  afterAll(async () => {
    await t?.server.close();
    await engine?.shutdown();
    await tokenizer?.dispose();
  });

  it("returns /tokenize's token_strs as the vocabulary's pieces (convert_ids_to_tokens), read from tokenizer.json", async () => {
    const json = JSON.parse(readFileSync(join(TINY_MODEL_DIR, 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number> };
      added_tokens: { id: number; content: string }[];
    };
    const pieces = new Map<number, string>(
      Object.entries(json.model.vocab).map(([piece, id]) => [id, piece]),
    );
    for (const added of json.added_tokens) pieces.set(added.id, added.content);
    const res = await fetch(`${t.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Hello world, café', return_token_strs: true }),
    });
    const body = (await res.json()) as { tokens: number[]; token_strs: string[] };
    expect(body.tokens.length).toBeGreaterThan(2);
    expect(body.token_strs).toEqual(body.tokens.map((id) => pieces.get(id)));
  });

  it("reproduces transformers' greedy continuations through /v1/completions, streamed or not", async () => {
    for (const [i, prompt] of golden.prompts.entries()) {
      const expected = tokenizer.decode(golden.greedy[i], { skipSpecialTokens: true });
      const request = { model: MODEL, prompt, max_tokens: 24, temperature: 0, ignore_eos: true };
      const res = await t.client.completions.create(request);
      expect(res.choices[0].text).toBe(expected);
      expect(res.choices[0].finish_reason).toBe('length');
      expect(res.usage).toMatchObject({ prompt_tokens: prompt.length, completion_tokens: 24 });
      const stream = await t.client.completions.create({
        ...request,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        usage = chunk.usage ?? usage;
      }
      expect(text).toBe(expected);
      expect(usage).toMatchObject({
        prompt_tokens: prompt.length,
        completion_tokens: 24,
        total_tokens: prompt.length + 24,
      });
    }
  });

  it('answers chat, streaming and not, with usage in the last chunk', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me a story about a fox.' }];
    const counted = (await fetch(`${t.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages }),
    }).then((r) => r.json())) as { count: number };
    const res = await t.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 12,
      temperature: 0,
    });
    expect(res.choices[0].message.role).toBe('assistant');
    expect(res.usage?.prompt_tokens).toBe(counted.count);
    const stream = await t.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 12,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      res.choices[0].message.content,
    );
    expect(chunks.at(-1)?.choices).toEqual([]);
    const { prompt_tokens, completion_tokens, total_tokens } = res.usage!;
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens, completion_tokens, total_tokens });
    // The second request found the whole prompt but its last token in the prefix cache.
    expect(chunks.at(-1)?.usage?.prompt_tokens_details?.cached_tokens).toBe(prompt_tokens - 1);
  });

  it('returns n = 3 seeded choices, the same on every call', async () => {
    const request = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'Once upon a time' }],
      n: 3,
      max_tokens: 16,
      temperature: 1,
      seed: 1234,
    };
    const first = await t.client.chat.completions.create(request);
    const [second, other] = await Promise.all([
      t.client.chat.completions.create(request),
      t.client.chat.completions.create({ ...request, seed: 4321 }),
    ]);
    const texts = (r: OpenAI.ChatCompletion) => r.choices.map((c) => c.message.content);
    expect(first.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(texts(second)).toEqual(texts(first));
    expect(new Set(texts(first)).size).toBeGreaterThan(1);
    expect(texts(other)).not.toEqual(texts(first));
  });

  it('returns logprobs whose best alternative is the greedy choice', async () => {
    const res = await t.client.completions.create(
      withExtras(
        { model: MODEL, prompt: golden.prompts[3], max_tokens: 6, temperature: 0, logprobs: 3 },
        { ignore_eos: true },
      ),
    );
    const lp = res.choices[0].logprobs!;
    // Each token reads as the text it releases, decoding the whole sequence: text that ends mid-character
    // (U+FFFD last) waits for the token that completes it (vLLM's rule), at most three tokens (a UTF-8
    // character has at most 4 bytes; the random model writes invalid UTF-8 here).
    const decoded = (k: number) =>
      tokenizer.decode([...golden.prompts[3], ...golden.greedy[3].slice(0, k)], {
        skipSpecialTokens: false,
        cleanUpTokenizationSpaces: false,
      });
    const released = [decoded(0)];
    let lastRelease = 0;
    for (let k = 1; k <= 6; k++) {
      const waits = decoded(k).endsWith('\uFFFD') && k - lastRelease < 4;
      released.push(waits ? released[k - 1] : decoded(k));
      if (!waits) lastRelease = k;
    }
    expect(lp.tokens).toEqual(released.slice(1).map((text, i) => text.slice(released[i].length)));
    lp.top_logprobs!.forEach((top, i) => {
      const best = Math.max(...Object.values(top));
      expect(lp.token_logprobs![i]).toBeCloseTo(best, 5);
      expect(lp.token_logprobs![i]).toBeLessThanOrEqual(0);
    });
    const chat = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
    });
    const content = chat.choices[0].logprobs!.content!;
    expect(content).toHaveLength(chat.usage!.completion_tokens);
    for (const entry of content) {
      expect(entry.top_logprobs).toHaveLength(2);
      expect(entry.logprob).toBeCloseTo(entry.top_logprobs[0].logprob, 5);
    }
  });

  it('stops at a stop string', async () => {
    const full = tokenizer.decode(golden.greedy[3], { skipSpecialTokens: true });
    const stop = tokenizer.decode([210]);
    expect(full.indexOf(stop)).toBeGreaterThan(0);
    const res = await t.client.completions.create(
      withExtras(
        { model: MODEL, prompt: golden.prompts[3], max_tokens: 24, temperature: 0, stop: [stop] },
        { ignore_eos: true },
      ),
    );
    expect(res.choices[0].text).toBe(full.slice(0, full.indexOf(stop)));
    expect(res.choices[0].finish_reason).toBe('stop');
  });

  it('parses a tool call the model writes, whole and streamed', async () => {
    const tools = [
      { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object' } } },
    ];
    const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
    const res = await t.client.chat.completions.create({ model: MODEL, messages, tools, max_tokens: 100 });
    expect(res.choices[0].finish_reason).toBe('tool_calls');
    expect(res.choices[0].message.content).toBeNull();
    const call = res.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    // Streamed: the name first, then the arguments in pieces, which the client joins to the same call.
    const stream = t.client.chat.completions.stream({ model: MODEL, messages, tools, max_tokens: 100 });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    stream.on('chunk', (chunk) => deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const streamed = (await stream.finalChatCompletion()).choices[0];
    expect(streamed.finish_reason).toBe('tool_calls');
    expect(streamed.message.content ?? '').toBe('');
    expect(streamed.message.tool_calls).toEqual([{ ...call, id: deltas[0].id }]);
    expect(deltas[0].function).toEqual({ name: 'get_weather', arguments: '' });
    expect(deltas.length).toBeGreaterThan(2);
  });

  it('aborts a stream the client drops and frees its KV', async () => {
    const before = engine.status();
    const abortsBefore = engine.metrics().requestSuccessTotal.abort;
    const stream = await t.client.completions.create(
      withExtras(
        { model: MODEL, prompt: 'A long story, told slowly', max_tokens: 200, stream: true as const },
        { ignore_eos: true },
      ),
    );
    let received = 0;
    for await (const _ of stream) if (++received === 3) break;
    await eventually(() => engine.status().numRunning === 0 && engine.status().numWaiting === 0);
    expect(engine.status().numFreeKvSlots).toBe(before.numKvSlots);
    expect(engine.metrics().requestSuccessTotal.abort).toBe(abortsBefore + 1);
  });

  it('answers bad requests with OpenAI errors and keeps serving', async () => {
    const tooLong = await t.client.completions
      .create({ model: MODEL, prompt: Array(300).fill(7), max_tokens: 4 })
      .catch((e) => e);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tooLong.error).toMatchObject({ code: 'context_length_exceeded', type: 'invalid_request_error' });
    const unknown = await t.client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    const badValue = await t.client.completions
      .create({ model: MODEL, prompt: 'x', top_p: 1.5 })
      .catch((e) => e);
    expect(badValue.error).toMatchObject({ param: 'top_p', message: 'top_p must be <= 1' });
    const ok = await t.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 2 });
    expect(ok.usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe('a full queue on the CPU runtime', () => {
  it('answers 503 with Retry-After, then serves again', async () => {
    const tokenizer = (await loadTokenizer(TINY_MODEL_DIR))!;
    const engine = await createEngine(
      { model: TINY_MODEL_DIR, device: 'cpu', maxNumSeqs: 1, maxQueueSize: 1, maxKvTokens: 4096 },
      // The running request takes 5 ms a step, so it still holds the only slot while the test goes on.
      { logitsProcessors: [slowSteps(tokenizer, 'busy', 5)] },
    );
    const t = await serveForTest(engine);
    try {
      const body = withExtras(
        { model: engine.modelName, prompt: 'busy', max_tokens: 2000, stream: true as const },
        { ignore_eos: true },
      );
      const running = await t.client.completions.create(body);
      const iterator = running[Symbol.asyncIterator]();
      await iterator.next(); // the first request runs: it holds the only sequence slot
      const waiting = t.client.completions.create({ model: engine.modelName, prompt: 'next', max_tokens: 2 });
      await eventually(() => engine.status().numWaiting === 1);
      const res = await fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: engine.modelName, prompt: 'one too many', max_tokens: 2 }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('queue_full');
      await iterator.return?.();
      expect((await waiting).choices[0].finish_reason).toBe('length');
    } finally {
      await t.server.close();
      await engine.shutdown();
      await tokenizer.dispose();
    }
  });
});
