import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeEngine } from './helpers/fake-engine.js';
import { serveForTest, type TestServer } from './helpers/serve.js';

/** Samples of a Prometheus text exposition: `name{labels} value` lines, keyed by name plus labels. */
function parseExposition(text: string): { samples: Map<string, number>; types: Map<string, string> } {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)$/.exec(line);
    if (type) types.set(type[1], type[2]);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (sample) samples.set(sample[1] + (sample[2] ?? ''), Number(sample[3]));
  }
  return { samples, types };
}

describe('info routes', () => {
  const engine = new FakeEngine();
  let t: TestServer;
  beforeAll(async () => {
    t = await serveForTest(engine, { servedModelName: 'tiny', maxModelLen: 300 });
  });
  afterAll(async () => {
    await t.server.close();
  });

  it('lists the served model', async () => {
    const models = await t.client.models.list();
    expect(models.data).toHaveLength(1);
    expect(models.data[0]).toMatchObject({
      id: 'tiny',
      object: 'model',
      owned_by: 'ferrum',
      max_model_len: 300,
    });
  });

  it('answers /health with 200', async () => {
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });

  it("answers /version with the server package's version, as vLLM does", async () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    const res = await fetch(`${t.url}/version`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ version: pkg.version });
  });

  it('exposes the engine metrics under ferrum: names with the model label', async () => {
    await t.client.completions.create({ model: 'tiny', prompt: 'abc', max_tokens: 3 });
    const res = await fetch(`${t.url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const { samples, types } = parseExposition(await res.text());
    const m = engine.metrics();
    const label = '{model_name="tiny"}';
    expect(samples.get(`ferrum:prompt_tokens_total${label}`)).toBe(m.promptTokensTotal);
    expect(samples.get(`ferrum:generation_tokens_total${label}`)).toBe(m.generationTokensTotal);
    expect(samples.get(`ferrum:num_requests_running${label}`)).toBe(0);
    expect(samples.get(`ferrum:kv_cache_usage_perc${label}`)).toBe(0);
    expect(samples.get('ferrum:request_success_total{model_name="tiny",finished_reason="length"}')).toBe(0);
    expect(types.get('ferrum:time_to_first_token_seconds')).toBe('histogram');
    expect(types.get('ferrum:prompt_tokens_total')).toBe('counter');
    // The fake's histogram: buckets 0.1 and 1 with cumulative counts 1, 2, and 2 in total.
    expect(samples.get('ferrum:time_to_first_token_seconds_bucket{model_name="tiny",le="0.1"}')).toBe(1);
    expect(samples.get('ferrum:time_to_first_token_seconds_bucket{model_name="tiny",le="+Inf"}')).toBe(2);
    expect(samples.get(`ferrum:time_to_first_token_seconds_count${label}`)).toBe(2);
    expect(samples.get(`ferrum:time_to_first_token_seconds_sum${label}`)).toBe(0.6);
    for (const name of [
      'num_requests_waiting',
      'prefix_cache_queries_total',
      'prefix_cache_hits_total',
      'num_preemptions_total',
      'inter_token_latency_seconds_count',
      'e2e_request_latency_seconds_count',
      'request_queue_time_seconds_count',
    ]) {
      expect(samples.has(`ferrum:${name}${label}`), name).toBe(true);
    }
  });

  it('tokenizes prompts and chats and detokenizes in vLLM shapes', async () => {
    const post = async (path: string, body: unknown) =>
      (await fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json())) as Record<string, unknown>;
    expect(await post('/tokenize', { prompt: 'hé', return_token_strs: true })).toEqual({
      count: 4,
      max_model_len: 300,
      tokens: [256, 104, 0xc3, 0xa9],
      token_strs: ['<s>', 'h', '\ufffd', '\ufffd'],
    });
    const chat = await post('/tokenize', { model: 'tiny', messages: [{ role: 'user', content: 'x' }] });
    expect(chat.tokens).toEqual([...Buffer.from('<|user|>x\n<|assistant|>')]);
    expect(await post('/detokenize', { tokens: [104, 0xc3, 0xa9] })).toEqual({ prompt: 'hé' });
    const bad = await post('/detokenize', { tokens: [9999] });
    expect(bad.error).toMatchObject({ param: 'tokens', code: 'invalid_value' });
  });
});
