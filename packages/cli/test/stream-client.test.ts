import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamClient } from '../src/bench/stream-request.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A loopback server streaming two text events and usage; records the sockets it accepted. */
async function sseServer(sockets: Socket[]): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"text":"a","finish_reason":null}]}\n\n');
      res.write('data: {"choices":[{"text":"b","finish_reason":"length"}]}\n\n');
      res.end('data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\ndata: [DONE]\n\n');
    });
  });
  server.on('connection', (socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('StreamClient (bench serve)', () => {
  it('sends sequential requests over one kept-alive connection, and closes it when the run ends', async () => {
    const sockets: Socket[] = [];
    const url = await sseServer(sockets);
    const client = new StreamClient({
      baseUrl: url,
      model: 'm',
      outputLen: 2,
      temperature: 0,
      ignoreEos: true,
    });
    for (let i = 0; i < 5; i++) {
      const result = await client.stream({ tokenIds: [1, 2, 3] });
      expect(result).toMatchObject({ ok: true, promptTokens: 3, outputTokens: 2 });
      expect(result.itlMs).toHaveLength(1);
    }
    expect(sockets).toHaveLength(1);
    expect(sockets[0].destroyed).toBe(false);
    client.close();
    await new Promise((resolve) => sockets[0].once('close', resolve));
  });
});
