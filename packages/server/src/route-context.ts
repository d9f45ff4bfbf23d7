import { randomBytes } from 'node:crypto';
import type { InferenceEngine } from '@ferrum/interfaces';
import type { ToolCallFormat } from '@ferrum/tokenizer';
import type { FinishReason, Usage } from '@ferrum/types';
import type { OpenRequests } from './open-requests.js';
import { OpenAIError } from './openai-error.js';

/** What every route needs: the engine and the server's settings. */
export interface RouteContext {
  readonly engine: InferenceEngine;
  readonly servedModelName: string;
  readonly maxModelLen: number;
  readonly retryAfterSeconds: number;
  /** How the served model writes tool calls; null when tool calls are not parsed. */
  readonly toolCallFormat: ToolCallFormat | null;
  /** Where routes register their engine runs (aborted on disconnect or at a drain's deadline). */
  readonly openRequests: OpenRequests;
}

/** 404 unless `model` is absent or the served model (OpenAI's `model_not_found`). */
export function checkModel(context: RouteContext, model: string | null | undefined): void {
  if (model == null || model === context.servedModelName) return;
  throw new OpenAIError(
    404,
    `the model \`${model}\` does not exist; this server serves \`${context.servedModelName}\``,
    'invalid_request_error',
    'model_not_found',
    'model',
  );
}

/** A response id such as `cmpl-3f2a…` (random, 24 hex digits). */
export function responseId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

/** Unix seconds, OpenAI's `created`. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** OpenAI's `usage` object. */
export interface UsageBody {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** Sums the usage of the engine requests of one HTTP request. */
export class UsageTotal {
  private prompt = 0;
  private completion = 0;
  private cached = 0;

  add(usage: Usage): void {
    this.prompt += usage.promptTokens;
    this.completion += usage.completionTokens;
    this.cached += usage.cachedPromptTokens;
  }

  toBody(): UsageBody {
    return {
      prompt_tokens: this.prompt,
      completion_tokens: this.completion,
      total_tokens: this.prompt + this.completion,
      prompt_tokens_details: { cached_tokens: this.cached },
    };
  }
}

/** `finish_reason` of a choice; an engine-side error is raised instead of reported as a reason. */
export function finishReasonOf(reason: FinishReason | undefined): 'stop' | 'length' | 'abort' | null {
  if (reason === undefined) return null;
  if (reason === 'error') throw new OpenAIError(500, 'generation failed', 'server_error', 'internal_error');
  return reason;
}
