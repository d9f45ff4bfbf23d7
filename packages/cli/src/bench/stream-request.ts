import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
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
 * Sends the streaming `/v1/completions` requests of one benchmark run over kept-alive connections. It
 * uses Node's `http` client rather than `fetch`: on loopback `fetch` took ~0.6 ms longer to get a request to the
 * server and ~0.1 ms longer to hand over the first event (`bench/results/serve-ttft-2026-11-23.md`), time the
 * reported TTFT and ITL would charge to the server.
 */
export class StreamClient {
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;

  constructor(private readonly target: BenchTarget) {
    const https = new URL(target.baseUrl).protocol === 'https:';
    this.agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    this.send = https ? httpsRequest : httpRequest;
  }

  /**
   * Send one request and time its chunks. A chunk that only reports the finish reason (no text) is not
   * timed; token counts come from the usage chunk. Never rejects: a failure is a result with `ok: false`.
   */
  async stream(prompt: BenchPrompt): Promise<RequestResult> {
    const { target } = this;
    const body = JSON.stringify({
      model: target.model,
      prompt: 'tokenIds' in prompt ? prompt.tokenIds : prompt.text,
      max_tokens: target.outputLen,
      temperature: target.temperature,
      ignore_eos: target.ignoreEos,
      stream: true,
      stream_options: { include_usage: true },
    });
    const start = performance.now();
    const failed = (error: string) => failedRequest(error, start);
    let times: readonly number[];
    let usage: { promptTokens: number; outputTokens: number };
    try {
      const res = await this.post(body);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300)
        return failed(`HTTP ${status}: ${(await readText(res)).slice(0, 200)}`);
      ({ times, usage } = await readEvents(res));
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

  /** Close the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private post(body: string): Promise<IncomingMessage> {
    const { target } = this;
    return new Promise((resolve, reject) => {
      const req = this.send(`${target.baseUrl}/v1/completions`, {
        method: 'POST',
        agent: this.agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
        },
      });
      req.once('response', resolve);
      req.once('error', reject);
      req.end(body);
    });
  }
}

async function readText(res: IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res) text += chunk;
  return text;
}

/**
 * Read server-sent events to the end: the arrival time of each chunk that carries text, and the usage
 * chunk's counts (`outputTokens` -1 when none came).
 * @throws on a malformed event, an error event, or a connection that drops.
 */
async function readEvents(
  res: IncomingMessage,
): Promise<{ times: number[]; usage: { promptTokens: number; outputTokens: number } }> {
  const times: number[] = [];
  const usage = { promptTokens: 0, outputTokens: -1 };
  let buffer = '';
  res.setEncoding('utf8');
  for await (const text of res) {
    const now = performance.now();
    buffer += text;
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
