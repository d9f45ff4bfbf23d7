import type { SamplingParams } from '@ferrum/types';
import { defineToken, type SpecificationVersion } from './injection-token.js';

/** What a logits processor may read about the row it processes. Valid during the call only. */
export interface LogitsContext {
  readonly requestId: string;
  readonly params: SamplingParams;
  readonly promptTokenIds: Int32Array;
  readonly outputTokenIds: Int32Array;
  /**
   * `outputTokenIds.length`, when the caller says it (`numOutputTokensOf` of `@ferrum/types` reads either).
   * The engine sets it and makes the `outputTokenIds` view only when a processor or penalty reads it.
   */
  readonly numOutputTokens?: number;
  /**
   * The model's EOS token ids (`ModelConfig.eosTokenIds`), which `params.minTokens` masks (with
   * `params.stopTokenIds`) until reached, unless `params.ignoreEos`. Absent means none.
   */
  readonly eosTokenIds?: readonly number[];
}

/**
 * A custom transformation of one row of logits, run on the host. Rows of requests no custom processor
 * applies to stay on the runtime's device fast path.
 */
export interface LogitsProcessor {
  readonly specificationVersion: SpecificationVersion;
  readonly name: string;
  /** Whether this processor must see this request's rows. Does not modify. */
  appliesTo(context: LogitsContext): boolean;
  /** Modify `logits` (length = vocab size) in place. */
  process(logits: Float32Array, context: LogitsContext): void;
}

/** One row handed to a {@link Sampler}. */
export interface SamplerRow {
  readonly context: LogitsContext;
  /**
   * 32-bit seed (`seed >>> 0` is used); draws are a pure function of (seed, outputTokenIds.length), as
   * `seededUniform` of `@ferrum/sampler` defines.
   */
  readonly seed: number;
}

/** Output of a {@link Sampler} for R rows. Arrays are owned by the sampler and valid until its next call. */
export interface SamplerOutput {
  readonly tokenIds: Int32Array;
  /**
   * Log-probability of each chosen token, per `params.logprobsMode`; NaN for rows whose `params.logprobs` is
   * null (not computed, which saves passes over the vocabulary).
   */
  readonly logprobs: Float32Array;
  /**
   * Per row: the `params.logprobs` most likely tokens and their log-probabilities (same mode), best first,
   * ties to the lower id; tokens of probability 0 (masked or truncated away) are not listed, so a row may
   * hold fewer. Null for rows whose `params.logprobs` is null.
   */
  readonly topLogprobs: readonly (readonly { readonly tokenId: number; readonly logprob: number }[] | null)[];
}

/**
 * Applies the built-in processing chain (penalties, bias, allowed/banned ids, min tokens, temperature,
 * top-k, top-p, min-p) and any custom processors, then draws one token per row.
 */
export interface Sampler {
  readonly specificationVersion: SpecificationVersion;
  /**
   * `logits` is R × vocabSize row-major; row r belongs to `rows[r]`. The sampler may modify `logits` in place.
   */
  sample(logits: Float32Array, vocabSize: number, rows: readonly SamplerRow[]): SamplerOutput;
}

export const SAMPLER = defineToken<Sampler>('SamplerV1');
/** Custom processors (resolveAll); each decides per request whether it applies. */
export const LOGITS_PROCESSORS = defineToken<LogitsProcessor>('LogitsProcessorV1');
