import type { EngineStatus, GenerateChunk, GenerateRequest, ModelInfo } from '@ferrum/types';
import { defineToken, type SpecificationVersion } from './injection-token.js';
import type { Tokenizer } from './tokenizer.js';

/** The public face of an engine: what the server, the CLI and library users call. */
export interface InferenceEngine {
  readonly specificationVersion: SpecificationVersion;
  readonly modelInfo: ModelInfo;
  /** Name the model is served under. */
  readonly modelName: string;
  /** Null when the model directory has no tokenizer (token-id prompts only). */
  readonly tokenizer: Tokenizer | null;
  /**
   * Submit a request; chunks stream as tokens are produced. Aborting `signal` (or breaking out of the
   * iteration) aborts the request and frees its KV. Throws FerrumError on invalid input before any chunk.
   */
  generate(
    request: GenerateRequest,
    options?: { readonly signal?: AbortSignal },
  ): AsyncIterable<GenerateChunk>;
  /** Abort a request by id; returns false when it is unknown or already finished. */
  abort(requestId: string): boolean;
  status(): EngineStatus;
  /** Stop admitting, finish or abort what runs, release the runtime. Idempotent. */
  shutdown(options?: { readonly drain?: boolean }): Promise<void>;
}

export const INFERENCE_ENGINE = defineToken<InferenceEngine>('InferenceEngineV1');
