import type { SamplingParams } from '@ferrum/types';
import { invalidRequest } from './openai-error.js';
import type { CompletionRequest } from './schemas/completion-request.js';

/** The sampling fields both endpoints share, after schema validation. */
export type SamplingFieldsBody = Omit<
  CompletionRequest,
  'prompt' | 'logprobs' | 'echo' | 'suffix' | 'best_of'
>;

/** What only the route knows: the effective token limit and how many logprobs to return. */
export interface SamplingContext {
  /** `max_tokens` (or `max_completion_tokens`) when given. */
  readonly maxTokens: number | null | undefined;
  /** Logprobs per token: null for none, 0 for the chosen token only, k for k alternatives. */
  readonly logprobs: number | null;
  /** Longest prompt of the request, for the default `max_tokens` (the rest of the context, as vLLM). */
  readonly longestPromptTokens: number;
  readonly maxModelLen: number;
  readonly vocabSize: number;
}

/** Map OpenAI's snake_case request fields to Ferrum's {@link SamplingParams}, checking cross-field rules. */
export function samplingFromRequest(
  body: SamplingFieldsBody,
  context: SamplingContext,
): Partial<SamplingParams> {
  const maxTokens = context.maxTokens ?? Math.max(1, context.maxModelLen - context.longestPromptTokens);
  const minTokens = body.min_tokens ?? 0;
  if (minTokens > maxTokens) {
    throw invalidRequest(`min_tokens (${minTokens}) must not exceed max_tokens (${maxTokens})`, 'min_tokens');
  }
  const stop =
    body.stop == null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter(Boolean);
  return {
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    topK: body.top_k ?? undefined,
    minP: body.min_p ?? undefined,
    repetitionPenalty: body.repetition_penalty ?? undefined,
    presencePenalty: body.presence_penalty ?? undefined,
    frequencyPenalty: body.frequency_penalty ?? undefined,
    logitBias: logitBiasOf(body.logit_bias, context.vocabSize),
    maxTokens,
    minTokens,
    stop,
    stopTokenIds: checkTokenIds(body.stop_token_ids ?? [], context.vocabSize, 'stop_token_ids'),
    ignoreEos: body.ignore_eos ?? undefined,
    seed: body.seed ?? undefined,
    logprobs: context.logprobs,
    n: body.n ?? 1,
    skipSpecialTokens: body.skip_special_tokens ?? undefined,
    includeStopStrInOutput: body.include_stop_str_in_output ?? undefined,
  };
}

function logitBiasOf(
  bias: Readonly<Record<string, number>> | null | undefined,
  vocabSize: number,
): Record<number, number> | undefined {
  if (bias == null) return undefined;
  const out: Record<number, number> = {};
  for (const [key, value] of Object.entries(bias)) {
    const id = Number(key);
    if (id >= vocabSize)
      throw invalidRequest(`logit_bias token id ${key} is outside [0, ${vocabSize})`, 'logit_bias');
    out[id] = value;
  }
  return out;
}

function checkTokenIds(ids: readonly number[], vocabSize: number, param: string): readonly number[] {
  const bad = ids.find((id) => id >= vocabSize);
  if (bad !== undefined)
    throw invalidRequest(`${param} holds token id ${bad}, outside [0, ${vocabSize})`, param);
  return ids;
}
