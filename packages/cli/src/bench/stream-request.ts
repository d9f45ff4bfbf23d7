import { fetchFailureReason } from '../fetch-failure-reason.js';
import type { BenchPrompt } from './prompt-dataset.js';

/** Where and how to send benchmark requests. */
export interface BenchTarget {
  /** Base URL without `/v1` (e.g. `http://127.0.0.1:8000`). */
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
  readonly outputLen: number;
  readonly temperature: number;
  /** Keep generating past EOS so every request produces `outputLen` tokens (vLLM's `ignore_eos`). */
  readonly ignoreEos: boolean;
}

/** Timings of one request (milliseconds), or its error. */
export interface RequestResult {
  readonly ok: boolean;
  readonly error?: string;
  readonly promptTokens: number;
  readonly outputTokens: number;
  /** Time to the first token-bearing chunk. */
  readonly ttftMs: number;
  /** Gaps between consecutive chunks that carry text (a finish-only chunk does not count). */
  readonly itlMs: readonly number[];
  readonly e2elMs: number;
}

/** The result of a request that failed with `error`, sent at `startMs` (`performance.now()`). */
export function failedRequest(error: string, startMs: number): RequestResult {
  return {
    ok: false,
    error,
    promptTokens: 0,
    outputTokens: 0,
    ttftMs: 0,
    itlMs: [],
    e2elMs: performance.now() - startMs,
  };
}

interface CompletionChunk {
  readonly choices?: readonly { readonly text?: string; readonly finish_reason?: string | null }[];
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number };
  readonly error?: { readonly message?: string };
}

/**
 * Send one streaming `/v1/completions` request and time its chunks. A chunk that only reports the
 * finish reason (no text) is not timed; token counts come from the usage chunk.
 */
export async function streamRequest(target: BenchTarget, prompt: BenchPrompt): Promise<RequestResult> {
  const body = {
    model: target.model,
    prompt: 'tokenIds' in prompt ? prompt.tokenIds : prompt.text,
    max_tokens: target.outputLen,
    temperature: target.temperature,
    ignore_eos: target.ignoreEos,
    stream: true,
    stream_options: { include_usage: true },
  };
  const start = performance.now();
  const failed = (error: string) => failedRequest(error, start);
  let times: readonly number[];
  let usage: { promptTokens: number; outputTokens: number };
  try {
    const res = await fetch(`${target.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
    });
    if (!res.ok || !res.body) return failed(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    ({ times, usage } = await readEvents(res.body));
  } catch (error) {
    // Refused, dropped mid-stream, a malformed or an error event: this request failed, the run goes on.
    return failed(fetchFailureReason(error));
  }
  if (times.length === 0) return failed('no token received');
  return {
    ok: true,
    promptTokens: usage.promptTokens,
    outputTokens: usage.outputTokens >= 0 ? usage.outputTokens : times.length,
    ttftMs: times[0] - start,
    itlMs: times.slice(1).map((t, i) => t - times[i]),
    e2elMs: performance.now() - start,
  };
}

/**
 * Read server-sent events to the end: the arrival time of each chunk that carries text, and the usage
 * chunk's counts (`outputTokens` -1 when none came).
 * @throws on a malformed event, an error event, or a connection that drops.
 */
async function readEvents(
  stream: ReadableStream<Uint8Array>,
): Promise<{ times: number[]; usage: { promptTokens: number; outputTokens: number } }> {
  const times: number[] = [];
  const usage = { promptTokens: 0, outputTokens: -1 };
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of stream) {
    const now = performance.now();
    buffer += decoder.decode(bytes, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const data = event.startsWith('data: ') ? event.slice(6) : '';
      if (data === '' || data === '[DONE]') continue;
      const chunk = JSON.parse(data) as CompletionChunk;
      if (chunk.error) throw new Error(chunk.error.message ?? 'error event');
      const choice = chunk.choices?.[0];
      if (choice && !(choice.finish_reason && !choice.text)) times.push(now);
      if (chunk.usage) {
        usage.promptTokens = chunk.usage.prompt_tokens ?? 0;
        usage.outputTokens = chunk.usage.completion_tokens ?? -1;
      }
    }
  }
  return { times, usage };
}
