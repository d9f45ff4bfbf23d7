import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { toOpenAIError } from './openai-error.js';

/** One server-sent event carrying a JSON payload. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

const DONE = 'data: [DONE]\n\n';

/**
 * Stream `events` (JSON payloads) as OpenAI-style SSE, ending with `data: [DONE]`; resolves when the
 * response has ended or the client has gone.
 *
 * The headers go out at once, before the first event, as vLLM's do: a client sets its response up while the
 * first step runs, not after the first token. Events are written to the socket as they come; a write that
 * fills the socket's buffer waits for it to drain, so a slow client slows its own request, never the
 * engine's other streams. An error after the headers went out is sent as an `{ error }` event (the OpenAI
 * client raises it).
 *
 * The reply is taken over from Fastify (`reply.hijack()`): headers set on it before (by `onRequest` hooks,
 * say) go out with the stream's, and `onResponse` hooks and request logging still run, but `onSend` hooks do
 * not see streamed responses.
 */
export async function sendSse(
  reply: FastifyReply,
  events: AsyncIterable<unknown>,
  retryAfterSeconds: number,
): Promise<void> {
  // Fastify would send the headers only with the first chunk of a piped stream.
  reply.hijack();
  const res = reply.raw;
  reply.header('content-type', 'text/event-stream; charset=utf-8');
  reply.header('cache-control', 'no-cache');
  reply.header('x-accel-buffering', 'no');
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) res.setHeader(name, value);
  }
  res.writeHead(reply.statusCode);
  res.flushHeaders();
  try {
    for await (const event of events) {
      if (!(await write(res, sseData(event)))) return;
    }
  } catch (error) {
    if (!(await write(res, sseData(toOpenAIError(error, retryAfterSeconds).toBody())))) return;
  }
  res.end(DONE);
}

/** Write `text`; once the socket's buffer is full, wait for it to drain. False when the client has gone. */
async function write(res: ServerResponse, text: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(text)) await drainedOrClosed(res);
  return !res.destroyed;
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
