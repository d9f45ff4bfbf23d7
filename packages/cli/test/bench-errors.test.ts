import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runFerrum } from './helpers/cli-run.js';

/** A loopback HTTP server answering every request with `handler`; resolves with its base URL. */
async function serveWith(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A loopback URL nothing listens on: a port that was free a moment ago. */
async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const SMALL = ['--num-prompts', '2', '--input-len', '4', '--output-len', '2'];

/** Exit status 1 and exactly one `ferrum:` line on stderr, no stack trace. */
function expectRuntimeFailure(run: { code: number; stderr: string }, pattern: RegExp): void {
  expect(run.code).toBe(1);
  const errorLines = run.stderr.split('\n').filter((line) => line.startsWith('ferrum:'));
  expect(errorLines).toHaveLength(1);
  expect(errorLines[0]).toMatch(pattern);
  expect(run.stderr).not.toContain('    at ');
}

describe('ferrum bench serve: runtime failures exit 1 with one line, usage errors 2', () => {
  it('exits 2 for a usage error (no --base-url)', async () => {
    const run = await runFerrum(['bench', 'serve']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('ferrum: bench serve: --base-url is required\n');
  });

  it('exits 1 when the server cannot be reached to list its models', async () => {
    const url = await unreachableUrl();
    const run = await runFerrum(['bench', 'serve', '--base-url', url, ...SMALL]);
    expectRuntimeFailure(run, new RegExp(`^ferrum: bench serve: cannot reach ${url}/v1/models: `));
    expect(run.stdout).toBe('');
  });

  it('exits 1 when every request fails because the server cannot be reached (--model given)', async () => {
    const url = await unreachableUrl();
    const run = await runFerrum(['bench', 'serve', '--base-url', url, '--model', 'm', ...SMALL]);
    expectRuntimeFailure(run, /^ferrum: bench serve: 2 of 2 requests failed; first error: /);
    expect(run.stdout).toMatch(/Failed requests:\s+2\n/);
  });

  it('exits 1 naming the HTTP status when /v1/models refuses (a wrong API key)', async () => {
    const url = await serveWith((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"bad key"}}');
    });
    const run = await runFerrum(['bench', 'serve', '--base-url', url, ...SMALL]);
    expectRuntimeFailure(run, /^ferrum: bench serve: .*\/v1\/models answered HTTP 401/);
  });

  it('exits 1 when /v1/models lists no model', async () => {
    const url = await serveWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[]}');
    });
    const run = await runFerrum(['bench', 'serve', '--base-url', url, ...SMALL]);
    expectRuntimeFailure(run, /lists no model; pass --model$/);
  });

  it('exits 1 with one line when the server streams something that is not JSON', async () => {
    const url = await serveWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {not json\n\n');
    });
    const run = await runFerrum(['bench', 'serve', '--base-url', url, '--model', 'm', ...SMALL]);
    expectRuntimeFailure(run, /^ferrum: bench serve: 2 of 2 requests failed; first error: .*JSON/);
  });

  it('exits 1 with one line when the connection drops in the middle of a stream', async () => {
    const url = await serveWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"text":"a"}]}\n\n');
      setTimeout(() => res.destroy(), 20);
    });
    const run = await runFerrum(['bench', 'serve', '--base-url', url, '--model', 'm', ...SMALL]);
    expectRuntimeFailure(run, /^ferrum: bench serve: 2 of 2 requests failed; first error: /);
  });
});
