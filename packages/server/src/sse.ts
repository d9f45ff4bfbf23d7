import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { toOpenAIError } from './openai-error.js';

/** One server-sent event carrying a JSON payload. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

const DONE = 'data: [DONE]\n\n';

/**
 * Stream `events` (JSON payloads) as OpenAI-style SSE, ending with `data: [DONE]`. Piping gives
 * backpressure: a slow client slows its own request, never the engine's other streams. An error after
 * the headers went out is sent as an `{ error }` event (the OpenAI client raises it).
 */
export function sendSse(
  reply: FastifyReply,
  events: AsyncIterable<unknown>,
  retryAfterSeconds: number,
): FastifyReply {
  async function* lines(): AsyncGenerator<string> {
    try {
      for await (const event of events) yield sseData(event);
    } catch (error) {
      yield sseData(toOpenAIError(error, retryAfterSeconds).toBody());
    }
    yield DONE;
  }
  reply.header('content-type', 'text/event-stream; charset=utf-8');
  reply.header('cache-control', 'no-cache');
  reply.header('x-accel-buffering', 'no');
  return reply.send(Readable.from(lines(), { objectMode: false }));
}
