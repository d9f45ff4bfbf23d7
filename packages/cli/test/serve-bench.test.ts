import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';
import { runFerrum } from './helpers/cli-run.js';

describe('ferrum serve, and ferrum bench serve against it (CPU, loopback)', () => {
  const stop = new AbortController();
  let exit: Promise<number>;
  let log = '';
  let url: string;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferrum-bench-'));
    const stderr = new PassThrough();
    stderr.on('data', (d) => (log += d));
    const args = [
      'serve',
      '--port',
      '0',
      '--max-kv-tokens',
      '8192',
      '--served-model-name',
      'tiny',
      '--api-key',
      'k',
    ];
    exit = runCli(args, {
      stdout: new PassThrough(),
      stderr,
      stdin: Readable.from([]),
      env: {},
      signal: stop.signal,
    });
    for (let i = 0; i < 400 && !/ at (http:\S+)/.test(log); i++) await new Promise((r) => setTimeout(r, 25));
    url = / at (http:\S+)/.exec(log)![1];
  });
  afterAll(async () => {
    stop.abort();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the OpenAI API with the served name and the API key', async () => {
    expect(log).toContain('serving tiny on cpu at http://127.0.0.1:');
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    expect(chat.choices[0].message.role).toBe('assistant');
    const denied = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(denied.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('benchmarks at fixed concurrency with exact input and output lengths, and writes JSON', async () => {
    const resultFile = join(dir, 'result.json');
    const { code, stdout } = await runFerrum(
      [
        'bench',
        'serve',
        '--base-url',
        url,
        '--num-prompts',
        '8',
        '--concurrency',
        '4',
        '--input-len',
        '16',
        '--output-len',
        '8',
        '--seed',
        '1',
        '--result-file',
        resultFile,
      ],
      { env: { OPENAI_API_KEY: 'k' } },
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/Successful requests:\s+8\n/);
    expect(stdout).toMatch(/Total generated tokens:\s+64\n/);
    expect(stdout).toContain('Median TTFT (ms):');
    const json = JSON.parse(readFileSync(resultFile, 'utf8'));
    expect(json).toMatchObject({
      model: 'tiny',
      completed: 8,
      failed: 0,
      total_input_tokens: 128,
      total_output_tokens: 64,
      max_concurrency: 4,
    });
    expect(json.max_concurrency_observed).toBe(4);
    expect(json.output_lens).toEqual(Array(8).fill(8));
    // One gap between each of the 8 token chunks; a finish chunk that flushes held-back text (a partial
    // UTF-8 character of the random tokens) arrives as one more text event.
    for (const gaps of json.itls as number[][]) expect([7, 8]).toContain(gaps.length);
    for (const key of ['ttft', 'tpot', 'itl', 'e2el']) {
      // Chunks that arrive in one network read share a timestamp, so a median gap may be 0 on loopback.
      expect(json[`mean_${key}_ms`]).toBeGreaterThan(0);
      expect(json[`p99_${key}_ms`]).toBeGreaterThanOrEqual(json[`median_${key}_ms`]);
    }
    // Time per output token times the tokens after the first, plus TTFT, is the end-to-end latency.
    expect(json.mean_e2el_ms).toBeGreaterThan(json.mean_ttft_ms);
    expect(json.output_throughput).toBeCloseTo(64 / json.duration, 6);
  });

  it('offers Poisson arrivals of prompts from a file', async () => {
    const dataset = join(dir, 'prompts.jsonl');
    writeFileSync(
      dataset,
      `${JSON.stringify({ prompt: 'Once upon a time' })}\n${JSON.stringify({ prompt_token_ids: [5, 6, 7] })}\n`,
    );
    const { code, stdout } = await runFerrum([
      'bench',
      'serve',
      '--base-url',
      `${url}/v1`,
      '--model',
      'tiny',
      '--api-key',
      'k',
      '--num-prompts',
      '4',
      '--request-rate',
      '50',
      '--output-len',
      '5',
      '--dataset',
      dataset,
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Successful requests:\s+4\n/);
    expect(stdout).toMatch(/Total generated tokens:\s+20\n/);
  });

  it('reports failed requests and exits non-zero', async () => {
    const { code, stdout } = await runFerrum([
      'bench',
      'serve',
      '--base-url',
      url,
      '--model',
      'nope',
      '--api-key',
      'k',
      '--num-prompts',
      '2',
      '--output-len',
      '2',
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/Failed requests:\s+2\n/);
  });

  it('stops on the signal', async () => {
    stop.abort();
    expect(await exit).toBe(0);
    expect(log).toContain('shutting down');
  });
});
