import type { InferenceEngine } from '@ferrum/interfaces';
import type { SamplingParams } from '@ferrum/types';
import type { BenchPrompt } from './prompt-dataset.js';
import { failedRequest, type RequestResult } from './stream-request.js';

/**
 * Run one request through an engine in this process and time its chunks as `StreamClient.stream` times server
 * events: TTFT to the first chunk carrying tokens, gaps between such chunks, end-to-end to the last.
 * Never rejects: an invalid request, an engine failure or an abort (`signal`, or the engine shutting
 * down) is a failed result.
 */
export async function engineRequest(
  engine: InferenceEngine,
  prompt: BenchPrompt,
  sampling: Partial<SamplingParams>,
  signal?: AbortSignal,
): Promise<RequestResult> {
  const start = performance.now();
  const times: number[] = [];
  let usage = { promptTokens: 0, completionTokens: 0 };
  try {
    for await (const chunk of engine.generate({ prompt, sampling }, { signal })) {
      if (chunk.tokenIds.length > 0) times.push(performance.now());
      if (chunk.finishReason === 'abort') return failedRequest('aborted', start);
      usage = chunk.usage ?? usage;
    }
  } catch (error) {
    return failedRequest(String((error as Error)?.message ?? error).replace(/\s+/g, ' '), start);
  }
  if (times.length === 0) return failedRequest('no token generated', start);
  return {
    ok: true,
    promptTokens: usage.promptTokens,
    outputTokens: usage.completionTokens,
    ttftMs: times[0] - start,
    itlMs: times.slice(1).map((t, i) => t - times[i]),
    e2elMs: performance.now() - start,
  };
}
