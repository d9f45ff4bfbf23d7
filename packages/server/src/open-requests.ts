import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GenerationRun } from './generation-run.js';
import { OpenAIError } from './openai-error.js';

/** How long aborted streams get to write their final chunk before their connections are cut. */
const ABORT_FLUSH_MS = 2000;

/** Routes that keep answering while draining, so monitoring can watch the drain. */
const OPEN_WHILE_DRAINING = new Set(['/metrics']);

/**
 * The server's open HTTP requests and the engine runs behind them: aborts a run when its client goes
 * away, and drains for a graceful shutdown (refuse new requests, wait for open ones, abort the rest).
 */
export class OpenRequests {
  private numOpen = 0;
  private readonly runs = new Set<GenerationRun>();
  private draining = false;
  /** Past the drain deadline: runs are aborted as soon as they start. */
  private aborting = false;
  private onIdle: (() => void) | null = null;
  private drained: Promise<void> | null = null;

  /** Requests whose response has not closed yet. */
  get count(): number {
    return this.numOpen;
  }

  /** Count every request until its response closes; answer 503 to new ones while draining. */
  register(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      if (this.draining && !OPEN_WHILE_DRAINING.has(request.routeOptions.url ?? '')) {
        const error = new OpenAIError(
          503,
          'the server is shutting down',
          'server_error',
          'server_shutting_down',
        );
        // Keep-alive clients must not send their next request on this connection.
        return reply.code(503).header('connection', 'close').send(error.toBody());
      }
      this.numOpen++;
      reply.raw.once('close', () => {
        this.numOpen--;
        if (this.numOpen === 0) this.onIdle?.();
      });
    });
  }

  /**
   * Follow `run` until its response closes: abort it when the client goes away before the response
   * finished (a closed socket, a cancelled stream), so the engine frees its KV at once, or when a drain
   * runs out of time.
   */
  track(reply: FastifyReply, run: GenerationRun): void {
    if (this.aborting) run.abort();
    this.runs.add(run);
    reply.raw.once('close', () => {
      this.runs.delete(run);
      if (!reply.raw.writableFinished) run.abort();
    });
  }

  /**
   * Stop taking requests and wait up to `timeoutMs` for the open ones to finish; then abort the runs
   * still going (the engine ends each with finish reason `abort`, so streams still send their final
   * chunk and `[DONE]`) and give them a moment to write it. Resolves when nothing is open or that moment
   * has passed. Calling it again returns the same drain.
   */
  drain(timeoutMs: number): Promise<void> {
    this.drained ??= this.drainFor(timeoutMs);
    return this.drained;
  }

  private async drainFor(timeoutMs: number): Promise<void> {
    this.draining = true;
    if (await this.idle(timeoutMs)) return;
    this.aborting = true;
    for (const run of this.runs) run.abort();
    await this.idle(ABORT_FLUSH_MS);
  }

  /** True once no request is open, false when `timeoutMs` passes first. */
  private idle(timeoutMs: number): Promise<boolean> {
    if (this.numOpen === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.onIdle = null;
        resolve(false);
      }, timeoutMs);
      this.onIdle = () => {
        clearTimeout(timer);
        this.onIdle = null;
        resolve(true);
      };
    });
  }
}
