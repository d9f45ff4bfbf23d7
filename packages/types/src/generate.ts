import type { SamplingParams } from './sampling-params.js';

/** Why a sequence ended. */
export type FinishReason = 'stop' | 'length' | 'abort' | 'error';

/**
 * Prompt of a request: text (tokenized by the engine; special tokens such as BOS are added unless
 * `addSpecialTokens` is false, e.g. for an already rendered chat template) or token ids.
 */
export type PromptInput =
  | { readonly text: string; readonly addSpecialTokens?: boolean }
  | { readonly tokenIds: readonly number[] };

/** One request to an {@link InferenceEngine}. */
export interface GenerateRequest {
  /** Unique id; generated when absent. */
  readonly id?: string;
  readonly prompt: PromptInput;
  readonly sampling?: Partial<SamplingParams>;
  /** Lower value runs first (vLLM's convention). Default 0. */
  readonly priority?: number;
}

/** Log-probability of one token, with alternatives when asked. */
export interface TokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
  readonly top?: readonly { readonly tokenId: number; readonly logprob: number }[];
}

/** Token counts of a request. */
export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedPromptTokens: number;
}

/** One streamed piece of one sequence's output. */
export interface GenerateChunk {
  readonly requestId: string;
  /** Which of the `n` sequences this chunk belongs to. */
  readonly index: number;
  /** Text released by the detokenizer and stop-string matcher (may be empty). */
  readonly text: string;
  /** New token ids of this chunk. */
  readonly tokenIds: readonly number[];
  readonly logprobs?: readonly TokenLogprob[];
  /** Set on the sequence's last chunk. */
  readonly finishReason?: FinishReason;
  /** Set on the request's last chunk (after every sequence finished). */
  readonly usage?: Usage;
}

/** A snapshot of an engine's load. */
export interface EngineStatus {
  readonly numWaiting: number;
  readonly numRunning: number;
  readonly numKvSlots: number;
  readonly numFreeKvSlots: number;
  readonly backend: string;
  readonly model: string;
}
