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

  it('streams tool calls as deltas and never leaks the tags as content', async () => {
    const stream = await t.client.chat.completions.create({
      model: 'fake-model',
      messages,
      tools: [weatherTool],
      stream: true,
    });
    let content = '';
    const calls: { index: number; function?: { name?: string; arguments?: string } }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      content += choice.delta.content ?? '';
      calls.push(...(choice.delta.tool_calls ?? []));
      finish = choice.finish_reason ?? finish;
    }
    expect(content).toBe('Let me check. ');
    expect(calls).toHaveLength(1);
    expect(calls[0].index).toBe(0);
    expect(calls[0].function?.name).toBe('get_weather');
    expect(JSON.parse(calls[0].function?.arguments ?? '')).toEqual({ city: 'Paris' });
    expect(finish).toBe('tool_calls');
  });

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
