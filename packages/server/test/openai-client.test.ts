import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeEngine } from './helpers/fake-engine.js';
import { eventually, serveForTest, type TestServer, withExtras } from './helpers/serve.js';

// The fake engine's greedy output cycles through the alphabet from (prompt length × 7) mod 26.
function greedyText(promptLength: number, numTokens: number): string {
  return Array.from({ length: numTokens }, (_, t) =>
    String.fromCharCode(97 + ((promptLength * 7 + t) % 26)),
  ).join('');
}

describe('OpenAI client against the server (fake engine)', () => {
  const engine = new FakeEngine();
  let t: TestServer;
  beforeAll(async () => {
    t = await serveForTest(engine);
  });
  afterAll(async () => {
    await t.server.close();
  });

  it('completes a text prompt, reporting usage and finish reason', async () => {
    const res = await t.client.completions.create({
      model: 'fake-model',
      prompt: 'hi',
      max_tokens: 5,
      temperature: 0,
    });
    // BOS + 2 bytes.
    expect(res.choices).toEqual([
      { index: 0, text: greedyText(3, 5), logprobs: null, finish_reason: 'length' },
    ]);
    expect(res.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });
    expect(res.id).toMatch(/^cmpl-/);
    expect(res.object).toBe('text_completion');
  });

  it('streams completions with usage in the last chunk, equal to the unstreamed text', async () => {
    const stream = await t.client.completions.create({
      model: 'fake-model',
      prompt: [5, 6, 7, 8],
      max_tokens: 6,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe(greedyText(4, 6));
    expect(chunks.filter((c) => c.choices[0]?.finish_reason === 'length')).toHaveLength(1);
  });

  it('numbers choices prompt × n + i for a list of prompts', async () => {
    const res = await t.client.completions.create({
      model: 'fake-model',
      prompt: [
        [1, 2],
        [1, 2, 3],
      ],
      n: 2,
      max_tokens: 3,
      temperature: 0,
    });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    // Greedy ignores the sequence index in the fake: both choices of a prompt agree.
    expect(res.choices.map((c) => c.text)).toEqual([
      greedyText(2, 3),
      greedyText(2, 3),
      greedyText(3, 3),
      greedyText(3, 3),
    ]);
    expect(res.usage?.completion_tokens).toBe(12);
  });

  it('answers chat, streaming and not, with n = 3', async () => {
    const messages = [{ role: 'user' as const, content: 'hello' }];
    const res = await t.client.chat.completions.create({
      model: 'fake-model',
      messages,
      n: 3,
      max_tokens: 4,
      seed: 5,
    });
    expect(res.choices).toHaveLength(3);
    expect(res.choices.map((c) => c.message.role)).toEqual(['assistant', 'assistant', 'assistant']);
    expect(new Set(res.choices.map((c) => c.message.content)).size).toBe(3);
    const stream = await t.client.chat.completions.create({
      model: 'fake-model',
      messages,
      n: 3,
      max_tokens: 4,
      seed: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', '', ''];
    const roles: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        if (c.delta.role) roles.push(c.delta.role);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(roles).toEqual(['assistant', 'assistant', 'assistant']);
    expect(texts).toEqual(res.choices.map((c) => c.message.content));
    expect(usage).toMatchObject({ completion_tokens: 12 });
  });

  it('renders the chat template into the prompt the engine receives', async () => {
    await t.client.chat.completions.create({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ],
      max_tokens: 1,
    });
    const prompt = engine.requests.at(-1)!.prompt;
    expect(Buffer.from(prompt).toString('utf8')).toBe('<|system|>be brief\n<|user|>a\nb\n<|assistant|>');
  });

  it('returns completion logprobs in the legacy shape and chat logprobs in the chat shape', async () => {
    const res = await t.client.completions.create({
      model: 'fake-model',
      prompt: 'x',
      max_tokens: 3,
      logprobs: 2,
      temperature: 0,
    });
    const lp = res.choices[0].logprobs!;
    expect(lp.tokens).toEqual(res.choices[0].text.split(''));
    expect(lp.text_offset).toEqual([0, 1, 2]);
    expect(lp.token_logprobs).toEqual(lp.tokens!.map((tok) => -0.1 - (tok.charCodeAt(0) % 5) / 10));
    // The chosen token plus 2 alternatives (the first alternative is the chosen token itself in the fake).
    expect(lp.top_logprobs!.map((top) => Object.keys(top).length)).toEqual([2, 2, 2]);
    const chat = await t.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 3,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = chat.choices[0].logprobs!.content!;
    expect(content.map((c) => c.token).join('')).toBe(chat.choices[0].message.content);
    expect(content[0].bytes).toEqual([...Buffer.from(content[0].token)]);
    expect(content.every((c) => c.top_logprobs.length === 3)).toBe(true);
  });

  it('reproduces seeded sampling across calls', async () => {
    const ask = (seed: number) =>
      t.client.completions.create({ model: 'fake-model', prompt: 'q', max_tokens: 8, temperature: 1, seed });
    const [a, b, c] = await Promise.all([ask(11), ask(11), ask(12)]);
    expect(a.choices[0].text).toBe(b.choices[0].text);
    expect(a.choices[0].text).not.toBe(c.choices[0].text);
  });

  it('maps OpenAI and vLLM sampling fields to the engine', async () => {
    const openAIFields = {
      model: 'fake-model',
      prompt: 'p',
      max_tokens: 4,
      temperature: 0.5,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      logit_bias: { '65': 10 },
      stop: ['zz', 'yy'],
      seed: 3,
    };
    const vllmFields = {
      top_k: 5,
      min_p: 0.1,
      repetition_penalty: 1.2,
      ignore_eos: true,
      min_tokens: 2,
      stop_token_ids: [7],
    };
    await t.client.completions.create(withExtras(openAIFields, vllmFields));
    expect(engine.requests.at(-1)!.sampling).toMatchObject({
      maxTokens: 4,
      temperature: 0.5,
      topP: 0.9,
      topK: 5,
      minP: 0.1,
      repetitionPenalty: 1.2,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      logitBias: { 65: 10 },
      stop: ['zz', 'yy'],
      stopTokenIds: [7],
      ignoreEos: true,
      minTokens: 2,
      seed: 3,
    });
    await t.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      max_completion_tokens: 2,
      max_tokens: 9,
      stop: 'halt',
    });
    expect(engine.requests.at(-1)!.sampling).toMatchObject({ maxTokens: 2, stop: ['halt'] });
  });

  it('defaults max_tokens to the rest of the context', async () => {
    await t.client.completions.create({
      model: 'fake-model',
      prompt: [1, 2, 3],
      stream: false,
      temperature: 0,
    });
    expect(engine.requests.at(-1)!.sampling.maxTokens).toBe(512 - 3);
  });

  it('aborts a stream the client stops reading and frees its KV', async () => {
    const total = engine.status().numKvSlots;
    const stream = await t.client.completions.create({
      model: 'fake-model',
      prompt: 'long',
      max_tokens: 400,
      stream: true,
    });
    let received = 0;
    for await (const _ of stream) if (++received === 5) break;
    await eventually(() => engine.status().numRunning === 0);
    expect(engine.outcomes.get(engine.requests.at(-1)!.id)).toBe('aborted');
    expect(engine.status().numFreeKvSlots).toBe(total);
  });
});
