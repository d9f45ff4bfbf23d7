import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFerrum } from './helpers/cli-run.js';

/** A small KV pool on the CPU keeps engine start-up quick. */
const ENGINE = ['--device', 'cpu', '--max-kv-tokens', '2048'];

/** Each value is at most the next. */
function expectOrdered(values: readonly number[]): void {
  for (let i = 1; i < values.length; i++) expect(values[i - 1]).toBeLessThanOrEqual(values[i]);
}

describe('ferrum bench throughput and bench latency (embedded tiny model, CPU)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferrum-offline-bench-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('throughput: every request gets exactly its lengths, and rates are tokens over the run time', async () => {
    const resultFile = join(dir, 'throughput.json');
    const started = performance.now();
    const { code, stdout, stderr } = await runFerrum([
      'bench',
      'throughput',
      ...ENGINE,
      '--num-prompts',
      '4',
      '--input-len',
      '16',
      '--prefix-len',
      '4',
      '--output-len',
      '8',
      '--result-file',
      resultFile,
    ]);
    const outerS = (performance.now() - started) / 1000;
    expect([code, stderr]).toEqual([
      0,
      'benchmarking qwen3-qknorm on cpu: 4 requests, 20 in (4 shared) / 8 out\n',
    ]);
    const json = JSON.parse(readFileSync(resultFile, 'utf8'));
    expect(stdout).toMatch(/Total generated tokens:\s+32\n(.*\n){2}Output token throughput \(tok\/s\):/);
    expect(json).toMatchObject({
      backend: 'cpu',
      num_prompts: 4,
      prefix_len: 4,
      completed: 4,
      failed: 0,
      // Nothing caps requests in flight: all four run at once.
      max_concurrency_observed: 4,
      total_input_tokens: 4 * 20,
      total_output_tokens: 4 * 8,
    });
    expect(json.input_lens).toEqual([20, 20, 20, 20]);
    expect(json.output_lens).toEqual([8, 8, 8, 8]);
    // The run's duration lies between the longest request and the whole command (engine load included).
    expect(json.duration).toBeGreaterThanOrEqual(Math.max(...json.e2els) / 1000);
    expect(json.duration).toBeLessThan(outerS);
    expect(json.request_throughput).toBeCloseTo(4 / json.duration, 6);
    expect(json.input_throughput).toBeCloseTo(80 / json.duration, 6);
    expect(json.output_throughput).toBeCloseTo(32 / json.duration, 6);
    expect(json.total_token_throughput).toBeCloseTo(112 / json.duration, 6);
    // One token per engine step, so 8 tokens arrive in 8 chunks with 7 gaps between them.
    for (const gaps of json.itls as number[][]) expect(gaps).toHaveLength(7);
    for (const key of ['ttft', 'tpot', 'itl', 'e2el']) {
      expect(json[`mean_${key}_ms`]).toBeGreaterThan(0);
      expectOrdered([json[`median_${key}_ms`], json[`p90_${key}_ms`], json[`p99_${key}_ms`]]);
    }
    for (const [i, e2el] of (json.e2els as number[]).entries()) expect(e2el).toBeGreaterThan(json.ttfts[i]);
  });

  it('throughput: --max-concurrency caps the requests in flight', async () => {
    const resultFile = join(dir, 'capped.json');
    const args = ['--num-prompts', '4', '--input-len', '8', '--output-len', '4', '--max-concurrency', '2'];
    const { code } = await runFerrum([
      'bench',
      'throughput',
      ...ENGINE,
      ...args,
      '--result-file',
      resultFile,
    ]);
    expect(code).toBe(0);
    const json = JSON.parse(readFileSync(resultFile, 'utf8'));
    expect(json).toMatchObject({ completed: 4, max_concurrency: 2, max_concurrency_observed: 2 });
  });

  it('latency: one measured latency per iteration, with ordered percentiles', async () => {
    const resultFile = join(dir, 'latency.json');
    const { code, stdout } = await runFerrum([
      'bench',
      'latency',
      ...ENGINE,
      '--batch-size',
      '4',
      '--input-len',
      '16',
      '--output-len',
      '8',
      '--num-iters-warmup',
      '1',
      '--num-iters',
      '3',
      '--result-file',
      resultFile,
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Iterations:\s+3\n/);
    expect(stdout).toMatch(/Avg latency \(s\):\s+\d+\.\d{4}\n/);
    const json = JSON.parse(readFileSync(resultFile, 'utf8'));
    expect(json).toMatchObject({ batch_size: 4, num_iters_warmup: 1, num_iters: 3 });
    const latencies = json.latencies as number[];
    expect(latencies).toHaveLength(3);
    for (const latency of latencies) expect(latency).toBeGreaterThan(0);
    const sorted = [...latencies].sort((a, b) => a - b);
    expect(json.avg_latency).toBeCloseTo((latencies[0] + latencies[1] + latencies[2]) / 3, 12);
    // The median of three is the middle one; the 10th and 99th percentiles lie within the range.
    expect(json.percentiles['50']).toBe(sorted[1]);
    expect(Object.keys(json.percentiles)).toEqual(['10', '25', '50', '75', '90', '99']);
    expectOrdered([sorted[0], ...Object.values(json.percentiles as Record<string, number>), sorted[2]]);
  });

  it.each([
    [['throughput', '--num-prompts', '0'], 'ferrum: --num-prompts must be at least 1, got 0'],
    [['throughput', '--prefix-len=-1'], 'ferrum: --prefix-len must be at least 0, got -1'],
    [['throughput', 'extra'], 'ferrum: bench throughput: unexpected argument "extra"'],
    [
      ['throughput', '--input-len', '2040', '--output-len', '16'],
      "ferrum: bench throughput: prompt + output lengths (2056 tokens) exceed the model's context length (2048)",
    ],
    [
      ['latency', '--input-len', '30', '--output-len', '8', '--max-model-len', '32'],
      'ferrum: bench latency: prompt + output lengths (38 tokens) exceed --max-model-len (32)',
    ],
    [['latency', '--batch-size', 'x'], 'ferrum: --batch-size must be an integer, got "x"'],
    [['latency', '--num-iters', '0'], 'ferrum: --num-iters must be at least 1, got 0'],
    [
      ['latency', '--bogus'],
      "ferrum: bench latency: Unknown option '--bogus' (see `ferrum bench latency --help`)",
    ],
    [['fast'], 'ferrum: bench: unknown benchmark "fast"; use serve, throughput or latency'],
    [[], 'ferrum: bench: no benchmark given; use serve, throughput or latency'],
  ])('bench %j exits 2 with one line', async (args, message) => {
    const { code, stdout, stderr } = await runFerrum(['bench', ...args]);
    expect(code).toBe(2);
    expect(stderr).toBe(`${message}\n`);
    expect(stdout).toBe('');
  });

  it('describes each benchmark with --help', async () => {
    const throughput = await runFerrum(['bench', 'throughput', '--help']);
    expect(throughput.code).toBe(0);
    expect(throughput.stdout).toMatch(/^Usage: ferrum bench throughput/);
    for (const flag of ['--num-prompts', '--prefix-len', '--max-concurrency', '--load-format', '--seed'])
      expect(throughput.stdout).toContain(flag);
    const latency = await runFerrum(['bench', 'latency', '--help']);
    expect(latency.stdout).toMatch(/^Usage: ferrum bench latency/);
    for (const flag of ['--batch-size', '--num-iters-warmup', '--num-iters', '--max-num-seqs'])
      expect(latency.stdout).toContain(flag);
    const serve = await runFerrum(['bench', 'serve', '--help']);
    expect(serve.stdout).toMatch(/^Usage: ferrum bench serve/);
    expect((await runFerrum(['bench', '--help'])).stdout).toMatch(/serve.*\n.*throughput.*\n.*latency/);
  });
});
