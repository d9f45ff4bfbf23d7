import { FerrumError } from '@ferrum/types';
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
  try {
    await app.listen({ host, port: options.port ?? 8000 });
  } catch (error) {
    await app.close();
    throw listenError(error, host, options.port ?? 8000);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { app, url: `http://${urlHost}:${port}`, close: () => app.close() };
}

/** Why a socket could not be bound, in words, by its system error code. */
const LISTEN_FAILURES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'the address is not available on this machine',
  ENOTFOUND: 'unknown host',
};

/** A bad host or a taken port is the caller's choice: a one-line FerrumError rather than a stack. */
function listenError(error: unknown, host: string, port: number): unknown {
  const reason = LISTEN_FAILURES[(error as { code?: string }).code ?? ''];
  if (reason === undefined) return error;
  return new FerrumError('invalid_argument', `cannot listen on ${host}:${port}: ${reason}`, {
    cause: error,
    details: { host, port },
  });
}
