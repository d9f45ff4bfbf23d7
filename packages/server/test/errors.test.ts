import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeEngine } from './helpers/fake-engine.js';
import { eventually, serveForTest, type TestServer } from './helpers/serve.js';

/** POST a raw body and return status, headers and parsed JSON. */
async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  return {
    status: res.status,
    headers: res.headers,
    json: (await res.json()) as { error: Record<string, unknown> },
  };
}

/** Every error body has exactly OpenAI's four fields. */
function expectOpenAIShape(json: { error: Record<string, unknown> }): void {
  expect(Object.keys(json)).toEqual(['error']);
  expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof json.error.message).toBe('string');
}

describe('errors (fake engine)', () => {
  const engine = new FakeEngine({ maxModelLen: 64, maxLiveRequests: 4, stepMs: 2 });
  let t: TestServer;
  let completions: string;
  beforeAll(async () => {
    t = await serveForTest(engine, { bodyLimitBytes: 4096 });
    completions = `${t.url}/v1/completions`;
  });
  afterAll(async () => {
    await t.server.close();
  });

  // After every error, the server still answers a good request.
  async function expectServing(): Promise<void> {
    const ok = await t.client.completions.create({ model: 'fake-model', prompt: 'ok', max_tokens: 2 });
    expect(ok.choices[0].finish_reason).toBe('length');
  }

  it('answers malformed JSON with 400 invalid_json', async () => {
    const { status, json } = await post(completions, '{"model": "fake-model", "prompt": ');
    expect(status).toBe(400);
    expectOpenAIShape(json);
    expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    await expectServing();
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const error = await t.client.completions.create({ model: 'gpt-9', prompt: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.error).toMatchObject({
      code: 'model_not_found',
      param: 'model',
      type: 'invalid_request_error',
    });
    expect(error.error.message).toContain('gpt-9');
    await expectServing();
  });

  it('serves a request without a model, or with a null one, on the served model (as vLLM does)', async () => {
    for (const model of [undefined, null]) {
      const res = await fetch(completions, {
        method: 'POST',
        body: JSON.stringify({ model, prompt: 'ok', max_tokens: 2 }),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model: string; choices: { finish_reason: string }[] };
      expect(body.model).toBe('fake-model');
      expect(body.choices[0].finish_reason).toBe('length');
    }
  });

  it('answers a prompt longer than the context with 400 context_length_exceeded', async () => {
    const error = await t.client.completions
      .create({ model: 'fake-model', prompt: 'y'.repeat(100), max_tokens: 4 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.error).toMatchObject({ code: 'context_length_exceeded', type: 'invalid_request_error' });
    await expectServing();
  });

  it.each([
    [{ temperature: -1 }, 'temperature', 'temperature must be >= 0'],
    [{ temperature: 'hot' }, 'temperature', 'temperature must be number'],
    [{ n: 0 }, 'n', 'n must be >= 1'],
    [{ max_tokens: 0 }, 'max_tokens', 'max_tokens must be >= 1'],
    [{ top_p: 0 }, 'top_p', 'top_p must be > 0'],
    [{ logprobs: 50 }, 'logprobs', 'logprobs must be <= 20'],
    [{ stop: 7 }, 'stop', 'stop must be a string or an array of strings'],
    [
      { logit_bias: { '5': 500 } },
      'logit_bias',
      'logit_bias must be an object mapping token ids to biases in [-100, 100]',
    ],
    [{ logit_bias: { '9999': 1 } }, 'logit_bias', 'logit_bias token id 9999 is outside [0, 258)'],
    [{ prompt: [1, 9999] }, 'prompt', 'prompt[1] = 9999 is outside the vocabulary [0, 258)'],
    [
      { prompt: 5 },
      'prompt',
      'prompt must be a string, an array of strings, an array of token ids, or an array of those',
    ],
    [{ prompt: undefined }, 'prompt', 'prompt is required'],
    [{ min_tokens: 5, max_tokens: 2 }, 'min_tokens', 'min_tokens (5) must not exceed max_tokens (2)'],
    [{ echo: true }, 'echo', 'echo is not supported'],
    [{ seed: 1e30 }, 'seed', 'seed must be <= 9007199254740991'],
  ])('answers invalid completion parameters %j with a clear 400', async (fields, param, message) => {
    const body = JSON.stringify({ model: 'fake-model', prompt: 'x', max_tokens: 2, ...fields });
    const { status, json } = await post(completions, body);
    expect(status).toBe(400);
    expectOpenAIShape(json);
    expect(json.error).toMatchObject({ type: 'invalid_request_error', param, message });
  });

  it.each([
    [{ messages: [] }, 'messages', 'messages must NOT have fewer than 1 items'],
    [
      { messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role',
      'messages[0].role must be one of system, developer, user, assistant, tool',
    ],
    [{ top_logprobs: 2 }, 'top_logprobs', 'top_logprobs requires logprobs to be true'],
    [
      { tool_choice: 'required', tools: [] },
      'tool_choice',
      'tool_choice "required" or a named function is not supported; use "auto"',
    ],
    [
      { messages: [{ role: 'assistant', content: 'x' }] },
      'messages',
      'the chat template failed: conversations must not start with an assistant turn',
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
      'messages[0].content[0]',
      'content part of type "image_url" is not supported (text only)',
    ],
    [
      { response_format: { type: 'json_object' } },
      'response_format',
      'response_format must be {"type": "text"}, the only format supported',
    ],
  ])('answers invalid chat parameters %j with a clear 400', async (fields, param, message) => {
    const body = JSON.stringify({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      ...fields,
    });
    const { status, json } = await post(`${t.url}/v1/chat/completions`, body);
    expect(status).toBe(400);
    expectOpenAIShape(json);
    expect(json.error).toMatchObject({ param, message });
    await expectServing();
  });

  it('answers an oversized body with 413', async () => {
    const { status, json } = await post(
      completions,
      JSON.stringify({ model: 'fake-model', prompt: 'z'.repeat(10_000) }),
    );
    expect(status).toBe(413);
    expectOpenAIShape(json);
    expect(json.error.code).toBe('request_too_large');
    await expectServing();
  });

  it('answers unknown routes and wrong content types in the same shape', async () => {
    const missing = await fetch(`${t.url}/v1/engines`);
    expect(missing.status).toBe(404);
    expectOpenAIShape((await missing.json()) as { error: Record<string, unknown> });
    const text = await post(completions, 'prompt=x', { 'content-type': 'text/plain' });
    expect(text.status).toBe(400);
    expect(text.json.error.message).toBe('body must be object');
    const xml = await post(completions, '<prompt/>', { 'content-type': 'application/xml' });
    expect(xml.status).toBe(415);
    expectOpenAIShape(xml.json);
  });
});

describe('a full engine queue (fake engine)', () => {
  it('answers 503 with Retry-After, then recovers', async () => {
    // 50 ms a token: the four streams hold every slot for seconds while the fifth request arrives.
    const engine = new FakeEngine({ maxLiveRequests: 4, stepMs: 50 });
    const t = await serveForTest(engine);
    try {
      const streams = await Promise.all(
        Array.from({ length: 4 }, () =>
          t.client.completions.create({ model: 'fake-model', prompt: 'busy', max_tokens: 100, stream: true }),
        ),
      );
      const { status, headers, json } = await post(
        `${t.url}/v1/completions`,
        JSON.stringify({ model: 'fake-model', prompt: 'x' }),
      );
      expect(status).toBe(503);
      expect(headers.get('retry-after')).toBe('1');
      expectOpenAIShape(json);
      expect(json.error).toMatchObject({ type: 'server_error', code: 'queue_full' });
      for (const stream of streams) stream.controller.abort();
      await eventually(() => engine.status().numRunning === 0);
      const ok = await t.client.completions.create({ model: 'fake-model', prompt: 'ok', max_tokens: 1 });
      expect(ok.choices[0].finish_reason).toBe('length');
    } finally {
      await t.server.close();
    }
  });
});

describe('API key', () => {
  it('requires the bearer key on /v1 routes only', async () => {
    const t = await serveForTest(new FakeEngine(), { apiKey: 'sekrit' });
    try {
      const wrong = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'nope', maxRetries: 0 });
      const error = await wrong.models.list().catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error.error).toMatchObject({ code: 'invalid_api_key' });
      expect((await t.client.models.list()).data[0].id).toBe('fake-model');
      expect((await fetch(`${t.url}/health`)).status).toBe(200);
    } finally {
      await t.server.close();
    }
  });
});
