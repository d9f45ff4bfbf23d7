import { createRequire } from 'node:module';
import type { EngineMetrics } from '@ferrum/engine';
import type { FastifyInstance } from 'fastify';
import { renderPrometheusMetrics } from '../prometheus-metrics.js';
import type { RouteContext } from '../route-context.js';

// This package's version, read from its package.json (two levels up from src/routes and from dist/routes).
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/** `GET /v1/models`, `GET /health`, `GET /version` (vLLM's) and `GET /metrics`. */
export function registerInfoRoutes(
  app: FastifyInstance,
  context: RouteContext,
  metrics: () => EngineMetrics,
): void {
  const created = Math.floor(Date.now() / 1000);
  app.get('/v1/models', async () => ({
    object: 'list',
    data: [
      {
        id: context.servedModelName,
        object: 'model',
        created,
        owned_by: 'ferrum',
        root: context.engine.modelName,
        parent: null,
        max_model_len: context.maxModelLen,
      },
    ],
  }));
  // vLLM's health check: 200 with an empty body while the server can take requests.
  app.get('/health', async (_request, reply) => reply.code(200).send());
  app.get('/version', async () => ({ version }));
  app.get('/metrics', async (_request, reply) =>
    reply
      .type('text/plain; version=0.0.4; charset=utf-8')
      .send(renderPrometheusMetrics(metrics(), context.servedModelName)),
  );
}
