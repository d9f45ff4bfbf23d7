import path from 'node:path';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChatPrompt } from '../src/chat-prompt.js';
import { OpenAIError } from '../src/openai-error.js';
import { FakeEngine } from './helpers/fake-engine.js';
import { serveForTest, type TestServer } from './helpers/serve.js';

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const prefill = [
  { role: 'user', content: 'Hello!' },
  { role: 'assistant', content: 'Hi, I am' },
] as const;

describe('continue_final_message in chat prompts (repo tiny tokenizer, ChatML)', () => {
  let tokenizer: HfTokenizer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(path.join(repoRoot, 'fixtures', 'tiny-models', 'qwen3-qknorm')))!;
  });
  afterAll(() => tokenizer?.dispose());

  it('ends the prompt inside the final message, which generation then continues', async () => {
    const prompt = await renderChatPrompt(tokenizer, {
      messages: [...prefill],
      continueFinalMessage: true,
      addGenerationPrompt: false,
    });
    expect(prompt.text).toBe('<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi, I am');
    expect(prompt.tokenIds).toEqual(tokenizer.encode(prompt.text, { addSpecialTokens: false }));
    // Without add_generation_prompt given, continuing implies none (vLLM's default of true would refuse).
    const implied = await renderChatPrompt(tokenizer, { messages: [...prefill], continueFinalMessage: true });
    expect(implied.text).toBe(prompt.text);
  });

  it('answers 400 when both are asked for, or when the template cannot continue the message', async () => {
    const both = await renderChatPrompt(tokenizer, {
      messages: [...prefill],
      continueFinalMessage: true,
      addGenerationPrompt: true,
    }).catch((error: unknown) => error);
    expect(both).toBeInstanceOf(OpenAIError);
    expect((both as OpenAIError).toBody()).toEqual({
      error: {
        message: expect.stringContaining('add_generation_prompt'),
        type: 'invalid_request_error',
        param: 'continue_final_message',
        code: 'invalid_value',
      },
    });
    const empty = await renderChatPrompt(tokenizer, {
      messages: [prefill[0], { role: 'assistant', content: null }],
      continueFinalMessage: true,
    }).catch((error: unknown) => error);
    expect(empty).toMatchObject({ statusCode: 400, param: 'messages', code: 'chat_template_error' });
  });
});

describe('continue_final_message over HTTP (fake engine)', () => {
  const engine = new FakeEngine({ maxModelLen: 256, maxLiveRequests: 4, stepMs: 1 });
  let t: TestServer;
  beforeAll(async () => {
    t = await serveForTest(engine);
  });
  afterAll(async () => {
    await t.server.close();
  });

  async function post(body: Record<string, unknown>) {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: prefill, max_tokens: 2, ...body }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  it('accepts the flag and refuses it with add_generation_prompt: true as OpenAI does errors', async () => {
    expect((await post({ continue_final_message: true, add_generation_prompt: false })).status).toBe(200);
    expect((await post({ continue_final_message: false })).status).toBe(200);
    const both = await post({ continue_final_message: true, add_generation_prompt: true });
    expect(both.status).toBe(400);
    expect(both.json.error).toMatchObject({ type: 'invalid_request_error', param: 'continue_final_message' });
    const wrongType = await post({ continue_final_message: 'yes' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.error).toMatchObject({ type: 'invalid_request_error' });
  });
});
