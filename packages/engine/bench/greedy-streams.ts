// The workload the engine benchmarks share: concurrent greedy streams of pseudo-random prompt ids, each read to
// its end (EOS ignored, so every stream produces exactly `outputTokens`).
import type { InferenceEngine } from '@ferrum/interfaces';

/** Runs `concurrency` streams of `promptTokens` prompt ids and `outputTokens` greedy outputs to completion. */
export async function runGreedyStreams(
  engine: Pick<InferenceEngine, 'generate'>,
  concurrency: number,
  promptTokens: number,
  outputTokens: number,
): Promise<void> {
  await Promise.all(
    Array.from({ length: concurrency }, async (_, r) => {
      const prompt = Array.from({ length: promptTokens }, (_, i) => 5 + ((r * 7919 + i * 104_729) % 500));
      const stream = engine.generate({
        prompt: { tokenIds: prompt },
        sampling: { temperature: 0, maxTokens: outputTokens, ignoreEos: true },
      });
      for await (const _ of stream);
    }),
  );
}
