import type { InferenceEngine } from '@ferrum/interfaces';

/** What {@link warmUp} needs of an engine (a FerrumEngine has it all). */
export type WarmUpTarget = Pick<InferenceEngine, 'generate' | 'modelInfo'> & {
  /** Longest prompt + output a request may ask for. */
  readonly maxModelLen: number;
};

/** What {@link warmUp} sends. */
export interface WarmUpOptions {
  /** Sequential requests; from the second on each hits the prefix the first left in the cache. Default 4. */
  readonly requests?: number;
  /** Tokens of the prefix the requests share, cut to fit the engine's maxModelLen. Default 96. */
  readonly prefixTokens?: number;
}

const SUFFIX_TOKENS = 8;
const OUTPUT_TOKENS = 4;

/**
 * Runs a few short requests through `engine` before it serves, so that the first real requests do not pay
 * for first use: V8 compiling the engine's paths (a prefix-cache hit's among them) and the runtime's first
 * step of each kind. SGLang's server sends such a request before it reports ready. The requests are ordinary
 * ones (ids `warmup-<i>`, counted in the metrics); their tokens stay in the prefix cache, evictable.
 */
export async function warmUp(engine: WarmUpTarget, options: WarmUpOptions = {}): Promise<void> {
  const requests = options.requests ?? 4;
  const room = engine.maxModelLen - SUFFIX_TOKENS - OUTPUT_TOKENS;
  if (room < 0) return; // no request fits: nothing to warm
  const prefixTokens = Math.max(0, Math.min(options.prefixTokens ?? 96, room));
  const vocabSize = engine.modelInfo.config.vocabSize;
  // Ids spread over the vocabulary, the same on every start; token-id prompts need no tokenizer.
  const id = (i: number) => (i * 7919 + 13) % vocabSize;
  const prefix = Array.from({ length: prefixTokens }, (_, i) => id(i));
  for (let r = 0; r < requests; r++) {
    const suffix = Array.from({ length: SUFFIX_TOKENS }, (_, i) => id(prefixTokens + r * SUFFIX_TOKENS + i));
    const stream = engine.generate({
      id: `warmup-${r}`,
      prompt: { tokenIds: [...prefix, ...suffix] },
      sampling: { temperature: 0, maxTokens: OUTPUT_TOKENS, ignoreEos: true },
    });
    for await (const _ of stream);
  }
}
