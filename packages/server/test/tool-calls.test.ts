import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectToolCallFormat } from '../src/index.js';
import { createByteTokenizer } from './helpers/byte-tokenizer.js';
import { FakeEngine } from './helpers/fake-engine.js';
import { serveForTest, type TestServer } from './helpers/serve.js';

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('tool calls (fake engine scripted to call a tool)', () => {
  // The fake answers a prompt that mentions the tool with a Hermes-style call, preceded by some content.
  const engine = new FakeEngine({
    scripts: {
      'two calls':
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n<tool_call>\n' +
        '{"name": "get_weather", "arguments": {"city": "São Paulo", "days": [1, 2]}}\n</tool_call>',
      get_weather:
        'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    },
  });
  let t: TestServer;
  beforeAll(async () => {
    t = await serveForTest(engine);
  });
  afterAll(async () => {
    await t.server.close();
  });
  const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }];

  it('detects the Hermes format from the chat template', () => {
    expect(detectToolCallFormat(createByteTokenizer())).toBe('hermes');
    expect(detectToolCallFormat(null)).toBeNull();
  });

  it('renders the tools into the prompt and returns tool_calls', async () => {
    const res = await t.client.chat.completions.create({
      model: 'fake-model',
      messages,
      tools: [weatherTool],
    });
    const rendered = Buffer.from(engine.requests.at(-1)!.prompt).toString('utf8');
    expect(rendered.startsWith(`<tools>${JSON.stringify([weatherTool])}</tools>\n`)).toBe(true);
    const choice = res.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Let me check. ');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0] as {
      id: string;
      type: string;
      function: { name: string; arguments: string };
    };
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
  });

  it('never leaks the tags of a streamed call as content', async () => {
    const stream = await t.client.chat.completions.create({
      model: 'fake-model',
      messages,
      tools: [weatherTool],
      stream: true,
    });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0].delta.content ?? '';
    expect(content).toBe('Let me check. ');
  });

  for (const [what, content] of [
    ['a call after some content', 'Weather in Paris?'],
    ['two calls', 'two calls please'],
  ]) {
    it(`streams ${what} as OpenAI does (name first, then argument pieces) and accumulates to the whole response`, async () => {
      const request = {
        model: 'fake-model',
        messages: [{ role: 'user' as const, content }],
        tools: [weatherTool],
      };
      const whole = await t.client.chat.completions.create(request);
      const stream = t.client.chat.completions.stream(request);
      const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      const callContents: unknown[] = [];
      stream.on('chunk', (chunk) => {
        const delta = chunk.choices[0]?.delta;
        deltas.push(...(delta?.tool_calls ?? []));
        if (delta?.tool_calls) callContents.push(delta.content);
      });
      const streamed = (await stream.finalChatCompletion()).choices[0];
      const expected = whole.choices[0];
      expect(streamed.finish_reason).toBe('tool_calls');
      // As OpenAI: a delta carrying a call has content null (the first) or none, never "".
      for (const content of callContents) expect(content ?? null).toBeNull();
      expect(streamed.message.content ?? null).toBe(expected.message.content);
      const withoutIds = (calls: OpenAI.ChatCompletionMessageToolCall[] | undefined) =>
        calls?.map(({ id, ...call }) => ({ ...call, id: id.startsWith('call_') }));
      expect(withoutIds(streamed.message.tool_calls)).toEqual(withoutIds(expected.message.tool_calls));
      // Per call: one delta with index, id, type, name and empty arguments, then argument pieces only.
      for (const [index, call] of (streamed.message.tool_calls ?? []).entries()) {
        const own = deltas.filter((d) => d.index === index);
        expect(own[0]).toEqual({
          index,
          id: call.id,
          type: 'function',
          function: {
            name: (call as OpenAI.ChatCompletionMessageFunctionToolCall).function.name,
            arguments: '',
          },
        });
        const pieces = own.slice(1);
        expect(pieces.length).toBeGreaterThan(1);
        for (const piece of pieces) expect(Object.keys(piece).sort()).toEqual(['function', 'index']);
        expect(pieces.map((p) => p.function?.arguments).join('')).toBe(
          (call as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments,
        );
      }
    });
  }

  it('leaves the text alone when tool_choice is none', async () => {
    const res = await t.client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'get_weather as text please' }],
      tools: [weatherTool],
      tool_choice: 'none',
    });
    expect(Buffer.from(engine.requests.at(-1)!.prompt).toString('utf8')).not.toContain('<tools>');
    expect(res.choices[0].message.content).toContain('<tool_call>');
    expect(res.choices[0].message.tool_calls).toBeUndefined();
    expect(res.choices[0].finish_reason).toBe('stop');
  });

  it('sends earlier tool calls back through the template', async () => {
    await t.client.chat.completions.create({
      model: 'fake-model',
      messages: [
        ...messages,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      tools: [weatherTool],
      max_tokens: 1,
    });
    const rendered = Buffer.from(engine.requests.at(-1)!.prompt).toString('utf8');
    expect(rendered).toContain(
      '<|assistant|><tool_call>{"name": "get_weather", "arguments": {"city":"Paris"}}</tool_call>\n<|tool|>sunny',
    );
  });
});

describe('tool calls in a format that starts with a special token (Mistral)', () => {
  it('keeps special tokens in the output so the parser sees [TOOL_CALLS], as vLLM does', async () => {
    const engine = new FakeEngine();
    const t = await serveForTest(engine, { toolCallParser: 'mistral' });
    try {
      const request = {
        model: 'fake-model',
        messages: [{ role: 'user' as const, content: 'hi' }],
        max_tokens: 2,
      };
      await t.client.chat.completions.create({ ...request, tools: [weatherTool] });
      expect(engine.requests.at(-1)!.sampling.skipSpecialTokens).toBe(false);
      // Without tools nothing is parsed, and the request's own choice stands.
      await t.client.chat.completions.create(request);
      expect(engine.requests.at(-1)!.sampling.skipSpecialTokens).toBe(true);
    } finally {
      await t.server.close();
    }
  });
});
