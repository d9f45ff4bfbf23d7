import { FerrumError } from '@ferrum/types';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServableEngine, type ServerOptions } from './create-server.js';

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
  /** Close at once: open responses, streams included, are cut. Does not shut the engine down. */
  close(): Promise<void>;
  /**
   * Stop gracefully (what `ferrum serve` does on Ctrl-C or SIGTERM): new requests get 503
   * `server_shutting_down` (`/health` too, `/metrics` keeps answering), open ones may finish for up to
   * `timeoutMs` (default 30 s); then the runs still going are aborted, so each stream still ends with a
   * chunk whose `finish_reason` is `abort`, and `data: [DONE]`; then the server closes. Does not shut
   * the engine down.
   */
  shutdown(options?: { readonly timeoutMs?: number }): Promise<void>;
  /** Requests whose response has not ended yet (streams included). */
  numOpenRequests(): number;
}

/** Default drain time of {@link RunningServer.shutdown}: Kubernetes' default grace period. */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

/** Create the server for `engine` and listen. */
export async function startServer(
  engine: ServableEngine,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  const { app, openRequests } = buildServer(engine, options);
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
  return {
    app,
    url: `http://${urlHost}:${port}`,
    close: () => app.close(),
    shutdown: async (shutdownOptions = {}) => {
      await openRequests.drain(shutdownOptions.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS);
      await app.close();
    },
    numOpenRequests: () => openRequests.count,
  };
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
