import { type BenchmarkResult, type LoadShape, offerLoad } from './offer-load.js';
import type { BenchPrompt } from './prompt-dataset.js';
import { type BenchTarget, streamRequest } from './stream-request.js';

/**
 * Offer `prompts` to an OpenAI-compatible server as streaming completions, shaped by `load`, and measure
 * TTFT, TPOT, ITL and end-to-end latency per request, as `vllm bench serve` does.
 */
export function runServeBenchmark(
  target: BenchTarget,
  prompts: readonly BenchPrompt[],
  load: LoadShape,
): Promise<BenchmarkResult> {
  return offerLoad((prompt) => streamRequest(target, prompt), prompts, load);
}
