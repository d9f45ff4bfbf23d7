/**
 * Sampling parameters of one request, in Ferrum's camelCase (the server maps OpenAI's snake_case).
 * Every field is optional in requests; {@link resolveSamplingParams} fills the defaults.
 */
export interface SamplingParams {
  /** 0 means greedy. Default 1. */
  readonly temperature: number;
  /** Keep the k most likely tokens; 0 or -1 disables. */
  readonly topK: number;
  /** Nucleus mass in (0, 1]; 1 disables. */
  readonly topP: number;
  /** Drop tokens whose probability is below `minP × p_max`; 0 disables. */
  readonly minP: number;
  /** Multiplicative penalty (>1 discourages) on tokens seen in prompt or output; 1 disables. */
  readonly repetitionPenalty: number;
  /** Subtracted once from logits of tokens present in the output; 0 disables. */
  readonly presencePenalty: number;
  /** Subtracted per occurrence in the output; 0 disables. */
  readonly frequencyPenalty: number;
  /** Added to the logits of the given token ids before sampling. */
  readonly logitBias: Readonly<Record<number, number>> | null;
  /** When set, only these ids may be sampled. */
  readonly allowedTokenIds: readonly number[] | null;
  /** These ids are never sampled. */
  readonly bannedTokenIds: readonly number[] | null;
  /** Maximum number of generated tokens. */
  readonly maxTokens: number;
  /** EOS and stop ids are masked until this many tokens are generated. */
  readonly minTokens: number;
  /** Stop strings (matched on detokenized text). */
  readonly stop: readonly string[];
  /** Extra stop token ids besides the model's EOS ids. */
  readonly stopTokenIds: readonly number[];
  /** Keep generating past EOS. */
  readonly ignoreEos: boolean;
  /** Seed of the request's own RNG; null draws one. */
  readonly seed: number | null;
  /** Number of sampled log-probabilities to return per token (0 = just the chosen one, null = none). */
  readonly logprobs: number | null;
  /** `raw`: log-softmax of the model's logits; `processed`: after the processor chain and temperature. */
  readonly logprobsMode: 'raw' | 'processed';
  /** Number of sequences to generate from one prompt (they share its KV). */
  readonly n: number;
  readonly skipSpecialTokens: boolean;
  /** Append the matched stop string to the output. */
  readonly includeStopStrInOutput: boolean;
}

/** Defaults that match vLLM's `SamplingParams`. */
export const DEFAULT_SAMPLING_PARAMS: SamplingParams = Object.freeze({
  temperature: 1,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  logitBias: null,
  allowedTokenIds: null,
  bannedTokenIds: null,
  maxTokens: 16,
  minTokens: 0,
  stop: [],
  stopTokenIds: [],
  ignoreEos: false,
  seed: null,
  logprobs: null,
  logprobsMode: 'raw',
  n: 1,
  skipSpecialTokens: true,
  includeStopStrInOutput: false,
});

/** Fill defaults; does not validate ranges (the engine's admission does). */
export function resolveSamplingParams(partial: Partial<SamplingParams> = {}): SamplingParams {
  const out: Record<string, unknown> = { ...DEFAULT_SAMPLING_PARAMS };
  for (const [key, value] of Object.entries(partial)) if (value !== undefined) out[key] = value;
  return out as unknown as SamplingParams;
}

/** True when these params penalize tokens by the outputs (repetition, presence or frequency penalty). */
export function hasPenalties(params: SamplingParams): boolean {
  return params.repetitionPenalty !== 1 || params.presencePenalty !== 0 || params.frequencyPenalty !== 0;
}

/** True when the built-in chain reduces to argmax for these params. */
export function isGreedy(params: SamplingParams): boolean {
  return params.temperature === 0 || params.topK === 1;
}
