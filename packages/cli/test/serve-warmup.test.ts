import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';

/** Starts `ferrum serve` on a free port with `extra` flags; returns its log, its /metrics text and its exit code. */
async function serveAndReadMetrics(extra: readonly string[]) {
  const stop = new AbortController();
  let log = '';
  const stderr = new PassThrough();
  stderr.on('data', (d) => (log += d));
  const exit = runCli(['serve', '--port', '0', '--max-kv-tokens', '4096', ...extra], {
    stdout: new PassThrough(),
    stderr,
    stdin: Readable.from([]),
    env: {},
    signal: stop.signal,
  });
  for (let i = 0; i < 400 && !/ at http:/.test(log); i++) await new Promise((r) => setTimeout(r, 25));
  const url = / at (http:\S+)/.exec(log)![1];
  const metrics = await (await fetch(`${url}/metrics`)).text();
  stop.abort();
  return { log, metrics, code: await exit };
}

/** The value of a Prometheus sample, 0 when absent. */
function sample(metrics: string, name: RegExp): number {
  const line = metrics.split('\n').find((l) => name.test(l));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('ferrum serve warms the engine up before it listens (CPU)', () => {
  it('by default: four short requests, the last three hitting the first one’s prefix', async () => {
    const { log, metrics, code } = await serveAndReadMetrics([]);
    expect(code).toBe(0);
    expect(log).toMatch(/warmed up in \d+ ms\n.*serving /s);
    expect(sample(metrics, /^ferrum:request_success_total\{.*finished_reason="length"/)).toBe(4);
    expect(sample(metrics, /^ferrum:prefix_cache_hits_total/)).toBe(3 * 96);
  });

  it('not with --skip-warmup', async () => {
    const { log, metrics, code } = await serveAndReadMetrics(['--skip-warmup']);
    expect(code).toBe(0);
    expect(log).not.toContain('warmed up');
    expect(sample(metrics, /^ferrum:request_success_total\{.*finished_reason="length"/)).toBe(0);
  });
});
