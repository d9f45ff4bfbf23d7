import type { FastifyInstance } from 'fastify';
import { createServer, type ServableEngine, type ServerOptions } from './create-server.js';

/** Options of {@link startServer}: where to listen, plus the server's options. */
export interface StartServerOptions extends ServerOptions {
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** Default 8000 (vLLM's); 0 picks a free port. */
  readonly port?: number;
}

/** A listening server. */
export interface RunningServer {
  readonly app: FastifyInstance;
  /** Base URL such as `http://127.0.0.1:8000`. */
  readonly url: string;
  /** Stop accepting connections and wait for open responses to end. Does not shut the engine down. */
  close(): Promise<void>;
}

/** Create the server for `engine` and listen. */
export async function startServer(
  engine: ServableEngine,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  const app = createServer(engine, options);
  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 8000 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { app, url: `http://${urlHost}:${port}`, close: () => app.close() };
}
