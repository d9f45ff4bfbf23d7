import { type IncomingMessage, request } from 'node:http';
import type { GenerateChunk, GenerateRequest } from '@ferrum/types';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../src/index.js';
import { FakeEngine } from './helpers/fake-engine.js';
import { eventually, serveForTest, type TestServer } from './helpers/serve.js';

/** POST a streaming completion with Node's client, which hands back the response as soon as its headers came. */
function postStream(url: string, body: unknown, signal?: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      signal,
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(text);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Streams `numEvents` chunks of `text` as fast as they are pulled, counting the pulls. */
class FloodEngine extends FakeEngine {
  numPulled = 0;

  constructor(
    private readonly numEvents: number,
    private readonly text: string,
  ) {
    super();
  }

  override generate(request: GenerateRequest): AsyncIterable<GenerateChunk> {
    const requestId = request.id ?? 'flood';
    const self = this;
    return (async function* () {
      for (let i = 0; i < self.numEvents; i++) {
        self.numPulled++;
        yield { requestId, index: 0, text: self.text, tokenIds: [97] };
      }
      yield { requestId, index: 0, text: '', tokenIds: [], finishReason: 'length' as const };
    })();
  }
}

describe('server-sent events', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.server.close();
    t = undefined;
  });

  it('sends the headers before the first token, so the client is ready when it comes', async () => {
    // The first token would come in a minute: only headers sent at once reach the client before the timeout.
    const engine = new FakeEngine({ stepMs: 60_000 });
    t = await serveForTest(engine);
    const abort = new AbortController();
    const res = await Promise.race([
      postStream(t.url, { model: 'fake-model', prompt: 'hi', max_tokens: 4, stream: true }, abort.signal),
      sleep(2000).then(() => Promise.reject(new Error('no headers within 2 s'))),
    ]);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(engine.metrics().generationTokensTotal).toBe(0);
    // The client goes: the engine request is aborted at once, its KV freed.
    abort.abort();
    res.destroy();
    await eventually(() => engine.outcomes.get(engine.requests[0].id) === 'aborted');
    expect(engine.status().numFreeKvSlots).toBe(engine.modelInfo.numKvSlots);
  });

  it('keeps the headers an onRequest hook set on the reply', async () => {
    const app = createServer(new FakeEngine());
    app.addHook('onRequest', (_request, reply, done) => {
      reply.header('x-request-tag', 'kept');
      done();
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as { port: number };
      const res = await postStream(`http://127.0.0.1:${port}`, {
        model: 'fake-model',
        prompt: 'hi',
        max_tokens: 2,
        stream: true,
      });
      expect(res.headers['x-request-tag']).toBe('kept');
      expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      res.resume();
      await new Promise((resolve) => res.once('end', resolve));
    } finally {
      await app.close();
    }
  });

  it('stops pulling events while the client does not read, and sends them all once it does', async () => {
    // 4,000 events of 16 KiB: 64 MiB, far more than the loopback socket's buffers hold.
    const numEvents = 4000;
    const engine = new FloodEngine(numEvents, 'x'.repeat(16 * 1024));
    t = await serveForTest(engine);
    const res = await postStream(t.url, { model: 'fake-model', prompt: 'hi', max_tokens: 4, stream: true });
    res.pause();
    await sleep(300);
    const stalledAt = engine.numPulled;
    await sleep(300);
    expect(engine.numPulled).toBe(stalledAt);
    expect(stalledAt).toBeLessThan(numEvents / 4);
    res.setEncoding('utf8');
    let numData = 0;
    let last = '';
    let buffer = '';
    for await (const text of res) {
      buffer += text;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        last = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        numData++;
      }
    }
    expect(engine.numPulled).toBe(numEvents);
    // Every token's event, the finish event, then [DONE].
    expect(numData).toBe(numEvents + 2);
    expect(last).toBe('data: [DONE]');
  });
});
