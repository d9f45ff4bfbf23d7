import { timingSafeEqual } from 'node:crypto';
import type { EngineMetrics } from '@ferrum/engine';
import type { InferenceEngine } from '@ferrum/interfaces';
import type { ToolCallFormat } from '@ferrum/tokenizer';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { OpenRequests } from './open-requests.js';
import { OpenAIError, toOpenAIError } from './openai-error.js';
import type { RouteContext } from './route-context.js';
import { registerChatCompletionsRoute } from './routes/chat-completions.js';
import { registerCompletionsRoute } from './routes/completions.js';
import { registerInfoRoutes } from './routes/info-routes.js';
import { registerTokenizeRoutes } from './routes/tokenize-routes.js';
import { formatSchemaErrors, type SchemaError } from './schema-error-formatter.js';
import { detectToolCallFormat } from './tool-call-format.js';

/** An engine the server can front: the public engine API plus its metrics. */
export type ServableEngine = InferenceEngine & { metrics(): EngineMetrics };

/** Options of {@link createServer}. */
export interface ServerOptions {
  /** Name clients must send as `model`; defaults to the engine's `modelName`. */
  readonly servedModelName?: string;
  /** When set, `/v1/*` routes require `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** Largest request body in bytes; larger bodies get 413. Default 16 MiB. */
  readonly bodyLimitBytes?: number;
  /**
   * Longest prompt + output, as the engine was configured; sets the default `max_tokens`. Defaults to the
   * model's position limit; capped by the KV pool.
   */
  readonly maxModelLen?: number;
  /** `Retry-After` seconds sent with 503 (queue full). Default 1. */
  readonly retryAfterSeconds?: number;
  /**
   * How the model writes tool calls (vLLM's `--tool-call-parser`): `auto` (the default) asks the chat
   * template; null returns tool-call text as plain content.
   */
  readonly toolCallParser?: ToolCallFormat | 'auto' | null;
  /** Fastify's logger option. Default false. */
  readonly logger?: FastifyServerOptions['logger'];
}

const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Build the OpenAI-compatible HTTP server for `engine` (not listening yet: call `listen`, or use
 * `startServer`, which can also drain it). The server does not own the engine: closing it leaves the
 * engine running.
 */
export function createServer(engine: ServableEngine, options: ServerOptions = {}): FastifyInstance {
  return buildServer(engine, options).app;
}

/** The server and its open requests (which `startServer` drains on shutdown). */
export function buildServer(
  engine: ServableEngine,
  options: ServerOptions,
): { app: FastifyInstance; openRequests: OpenRequests } {
  const retryAfterSeconds = options.retryAfterSeconds ?? 1;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    // close() ends every connection, streams included (clients may hold idle or half-open sockets);
    // a graceful stop drains the open requests first (`RunningServer.shutdown`).
    forceCloseConnections: true,
    // Strict validation: no coercion of "1" to 1 and no silent removal of fields; `verbose` lets the
    // formatter read each union's description.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, verbose: true } },
    schemaErrorFormatter: (errors, dataVar) =>
      formatSchemaErrors(errors as unknown as SchemaError[], dataVar),
  });
  const openRequests = new OpenRequests();
  // First hook: while draining, nothing else (API key checks included) runs for a refused request.
  openRequests.register(app);
  const context: RouteContext = {
    engine,
    servedModelName: options.servedModelName ?? engine.modelName,
    // The engine never runs a sequence longer than its KV pool.
    maxModelLen: Math.min(
      options.maxModelLen ?? engine.modelInfo.config.maxPositionEmbeddings,
      engine.modelInfo.numKvSlots,
    ),
    retryAfterSeconds,
    toolCallFormat:
      (options.toolCallParser ?? 'auto') === 'auto'
        ? detectToolCallFormat(engine.tokenizer)
        : (options.toolCallParser as ToolCallFormat | null),
    openRequests,
  };
  if (options.apiKey) requireApiKey(app, options.apiKey);
  app.setErrorHandler((error, request, reply) => {
    const openAIError = toOpenAIError(error, retryAfterSeconds);
    if (openAIError.statusCode >= 500) request.log.error(error);
    return sendError(reply, openAIError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new OpenAIError(
        404,
        `unknown route ${request.method} ${request.url}`,
        'invalid_request_error',
        'not_found',
      ),
    ),
  );
  registerCompletionsRoute(app, context);
  registerChatCompletionsRoute(app, context);
  registerTokenizeRoutes(app, context);
  registerInfoRoutes(app, context, () => engine.metrics());
  return { app, openRequests };
}

function sendError(reply: FastifyReply, error: OpenAIError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send(error.toBody());
}

/** Bearer-token check on the OpenAI routes (`/v1/*`); health, metrics and tokenize stay open, as in vLLM. */
function requireApiKey(app: FastifyInstance, apiKey: string): void {
  const expected = Buffer.from(`Bearer ${apiKey}`);
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return;
    const given = Buffer.from(request.headers.authorization ?? '');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
    return sendError(
      reply,
      new OpenAIError(401, 'invalid or missing API key', 'invalid_request_error', 'invalid_api_key'),
    );
  });
}
