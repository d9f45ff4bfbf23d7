import { FerrumError, type SamplingParams } from '@ferrum/types';

/** Limits {@link validateSamplingParams} checks against. */
export interface SamplingParamsLimits {
  /** Vocabulary size of the model; token ids must lie in `[0, vocabSize)`. */
  readonly vocabSize: number;
  /** Largest accepted `logprobs` (vLLM's `max_logprobs`, OpenAI's limit). Default 20. */
  readonly maxLogprobs?: number;
}

/** Bound of `logitBias` values, as OpenAI documents it. */
const MAX_ABS_LOGIT_BIAS = 100;
/** Bound of presence and frequency penalties, as OpenAI documents it. */
const MAX_ABS_OPENAI_PENALTY = 2;
const DEFAULT_MAX_LOGPROBS = 20;

function fail(field: string, requirement: string, value: unknown): never {
  throw new FerrumError('invalid_argument', `${field} must be ${requirement} (got ${String(value)})`, {
    details: { field, value },
  });
}

function checkTokenId(field: string, id: unknown, vocabSize: number): void {
  if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= vocabSize) {
    fail(field, `token ids in [0, ${vocabSize})`, id);
  }
}

function checkTokenIds(field: string, ids: readonly number[] | null, vocabSize: number): void {
  if (ids === null) return;
  if (!Array.isArray(ids)) fail(field, 'an array of token ids or null', ids);
  for (const id of ids) checkTokenId(field, id, vocabSize);
}

function checkLogitBias(bias: SamplingParams['logitBias'], vocabSize: number): void {
  if (bias === null) return;
  if (typeof bias !== 'object') fail('logitBias', 'an object mapping token ids to numbers, or null', bias);
  for (const [key, value] of Object.entries(bias)) {
    checkTokenId('logitBias', /^\d+$/.test(key) ? Number(key) : key, vocabSize);
    if (typeof value !== 'number' || !(Math.abs(value) <= MAX_ABS_LOGIT_BIAS)) {
      fail(`logitBias[${key}]`, `a number in [-${MAX_ABS_LOGIT_BIAS}, ${MAX_ABS_LOGIT_BIAS}]`, value);
    }
  }
}

function checkIntegerAtLeast(field: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) fail(field, `an integer >= ${min}`, value);
}

function checkSampling(p: SamplingParams): void {
  if (!(p.temperature >= 0 && Number.isFinite(p.temperature)))
    fail('temperature', 'finite and >= 0', p.temperature);
  if (!(p.topP > 0 && p.topP <= 1)) fail('topP', 'in (0, 1]', p.topP);
  checkIntegerAtLeast('topK', p.topK, -1);
  if (!(p.minP >= 0 && p.minP <= 1)) fail('minP', 'in [0, 1]', p.minP);
  if (!(p.repetitionPenalty > 0 && Number.isFinite(p.repetitionPenalty))) {
    fail('repetitionPenalty', 'finite and > 0', p.repetitionPenalty);
  }
  for (const field of ['presencePenalty', 'frequencyPenalty'] as const) {
    if (!(Math.abs(p[field]) <= MAX_ABS_OPENAI_PENALTY)) {
      fail(field, `in [-${MAX_ABS_OPENAI_PENALTY}, ${MAX_ABS_OPENAI_PENALTY}]`, p[field]);
    }
  }
}

function checkLengthsAndOutputs(p: SamplingParams, maxLogprobs: number): void {
  checkIntegerAtLeast('maxTokens', p.maxTokens, 1);
  checkIntegerAtLeast('minTokens', p.minTokens, 0);
  if (p.minTokens > p.maxTokens) fail('minTokens', `<= maxTokens (${p.maxTokens})`, p.minTokens);
  checkIntegerAtLeast('n', p.n, 1);
  if (p.seed !== null && !Number.isSafeInteger(p.seed)) fail('seed', 'a safe integer or null', p.seed);
  if (
    p.logprobs !== null &&
    !(Number.isInteger(p.logprobs) && p.logprobs >= 0 && p.logprobs <= maxLogprobs)
  ) {
    fail('logprobs', `null or an integer in [0, ${maxLogprobs}]`, p.logprobs);
  }
  if (p.logprobsMode !== 'raw' && p.logprobsMode !== 'processed') {
    fail('logprobsMode', "'raw' or 'processed'", p.logprobsMode);
  }
  if (!Array.isArray(p.stop) || p.stop.some((s) => typeof s !== 'string' || s.length === 0)) {
    fail('stop', 'an array of non-empty strings', JSON.stringify(p.stop));
  }
}

/**
 * Check every range of resolved sampling parameters (the server's and the engine's admission call this).
 * Does not modify `params`.
 *
 * @throws FerrumError `invalid_argument` naming the first offending field, e.g.
 *   `topP must be in (0, 1] (got 1.5)`, with `details: { field, value }`.
 */
export function validateSamplingParams(params: SamplingParams, limits: SamplingParamsLimits): void {
  const { vocabSize } = limits;
  if (!Number.isSafeInteger(vocabSize) || vocabSize < 1) fail('vocabSize', 'a positive integer', vocabSize);
  checkSampling(params);
  checkLengthsAndOutputs(params, limits.maxLogprobs ?? DEFAULT_MAX_LOGPROBS);
  checkLogitBias(params.logitBias, vocabSize);
  checkTokenIds('allowedTokenIds', params.allowedTokenIds, vocabSize);
  if (params.allowedTokenIds !== null && params.allowedTokenIds.length === 0) {
    fail('allowedTokenIds', 'non-empty when given', '[]');
  }
  checkTokenIds('bannedTokenIds', params.bannedTokenIds, vocabSize);
  checkTokenIds('stopTokenIds', params.stopTokenIds, vocabSize);
  if (params.allowedTokenIds !== null && params.bannedTokenIds !== null) {
    const banned = new Set(params.bannedTokenIds);
    if (params.allowedTokenIds.every((id) => banned.has(id))) {
      fail('bannedTokenIds', 'a set that leaves one of allowedTokenIds samplable', 'every allowed id banned');
    }
  }
}
