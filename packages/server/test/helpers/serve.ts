import OpenAI from 'openai';
import {
  type RunningServer,
  type ServableEngine,
  type StartServerOptions,
  startServer,
} from '../../src/index.js';

/** A server on a random loopback port and an OpenAI client pointed at it. */
export interface TestServer {
  readonly server: RunningServer;
  readonly client: OpenAI;
  readonly url: string;
}

export async function serveForTest(
  engine: ServableEngine,
  options: StartServerOptions = {},
): Promise<TestServer> {
  const server = await startServer(engine, { host: '127.0.0.1', port: 0, ...options });
  const client = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: options.apiKey ?? 'unused',
    maxRetries: 0,
  });
  return { server, client, url: server.url };
}

/** Poll `check` until it holds (the engine frees KV asynchronously after an abort). */
export async function eventually(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Add vLLM's extra request fields (`ignore_eos`, `top_k`, ...) that the OpenAI client's types do not know. */
export function withExtras<T extends object>(body: T, extras: Readonly<Record<string, unknown>>): T {
  return { ...body, ...extras };
}
