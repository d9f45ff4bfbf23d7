import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';
import { runFerrum } from './helpers/cli-run.js';

/** Start a long completion stream and return its reader once the first event arrived. */
async function openLongStream(url: string) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // 2000 tokens of the tiny model take far longer than the test needs to send its signal.
    body: JSON.stringify({ model: 'tiny', prompt: 'Once', max_tokens: 2000, ignore_eos: true, stream: true }),
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value, { stream: true });
  return {
    /** Everything the server sends until it ends the response. */
    async rest(): Promise<string> {
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
      return text;
    },
  };
}

/** Poll `check` for up to 10 s. */
async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
}

/** Wait until `log()` shows the server's URL. */
async function serverUrl(log: () => string): Promise<string> {
  await waitFor(() => / at (http:\S+)/.test(log()));
  return / at (http:\S+)/.exec(log())![1];
}

describe('ferrum serve shutting down (CPU, loopback)', () => {
  it('ends open streams with a final chunk and [DONE] when the drain timeout expires, then exits 0', async () => {
    const stop = new AbortController();
    let log = '';
    const stderr = new PassThrough();
    stderr.on('data', (d) => (log += d));
    const exit = runCli(
      [
        'serve',
        '--port',
        '0',
        '--max-kv-tokens',
        '4096',
        '--served-model-name',
        'tiny',
        '--shutdown-timeout',
        '0',
      ],
      {
        stdout: new PassThrough(),
        stderr,
        stdin: Readable.from([]),
        env: {},
        signal: stop.signal,
      },
    );
    const stream = await openLongStream(await serverUrl(() => log));
    stop.abort();
    const events = (await stream.rest()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const last = JSON.parse(events.at(-2)!.slice('data: '.length));
    expect(last.choices[0].finish_reason).toBe('abort');
    expect(await exit).toBe(0);
    expect(log).toContain('shutting down: waiting up to 0 s for 1 open request');
  });

  it('refuses a negative --shutdown-timeout', async () => {
    const { code, stderr } = await runFerrum(['serve', '--shutdown-timeout=-1']);
    expect(code).toBe(2);
    expect(stderr).toBe('ferrum: --shutdown-timeout must be at least 0, got -1\n');
  });

  const BIN = resolve(import.meta.dirname, '../dist/bin.js');
  it.skipIf(!existsSync(BIN))(
    `exits 130 at once on a second signal, however long the drain would be${existsSync(BIN) ? '' : ' (skipped: packages/cli/dist absent)'}`,
    async () => {
      const child = spawn(
        process.execPath,
        [BIN, 'serve', '--port', '0', '--max-kv-tokens', '4096', '--served-model-name', 'tiny'],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let log = '';
      child.stderr.on('data', (d) => (log += d));
      const exited = new Promise<number | null>((done) => child.on('close', done));
      const stream = await openLongStream(await serverUrl(() => log));
      child.kill('SIGINT');
      // Signals sent back to back may merge into one: the second goes once the drain has begun.
      await waitFor(() => log.includes('shutting down'));
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      await stream.rest().catch(() => undefined);
    },
  );
});
