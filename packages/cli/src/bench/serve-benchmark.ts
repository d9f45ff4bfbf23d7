import { type BenchmarkResult, type LoadShape, offerLoad } from './offer-load.js';
import type { BenchPrompt } from './prompt-dataset.js';
import { type BenchTarget, StreamClient } from './stream-request.js';

/**
 * Offer `prompts` to an OpenAI-compatible server as streaming completions, shaped by `load`, and measure
 * TTFT, TPOT, ITL and end-to-end latency per request, as `vllm bench serve` does.
 */
export async function runServeBenchmark(
  target: BenchTarget,
  prompts: readonly BenchPrompt[],
  load: LoadShape,
): Promise<BenchmarkResult> {
  const client = new StreamClient(target);
  try {
    return await offerLoad((prompt) => client.stream(prompt), prompts, load);
  } finally {
    client.close();
  }
}
