import type {
  ComputeBackend,
  KvCacheManager,
  LogitsProcessor,
  ModelExecutor,
  Sampler,
  Scheduler,
  Tokenizer,
} from '@ferrum/interfaces';
import type { BackendCapabilities } from '@ferrum/types';
import type { DependencyContainer } from 'tsyringe';
import type { EngineOptions } from './engine-options.js';

/** What factories see when the engine builds its parts (after the model is loaded). */
export interface EngineBuildContext {
  readonly options: EngineOptions;
  readonly executor: ModelExecutor;
  readonly capabilities: BackendCapabilities;
  readonly maxModelLen: number;
}

/**
 * Replacements for the engine's default parts. Each maps onto a registration in the engine's tsyringe
 * child container (the tokens of `@ferrum/interfaces`); `configure` gets the container last for anything else.
 */
export interface EngineOverrides {
  /** Backends to choose from instead of cpu/cuda/metal (e.g. a third party's, or a fake in tests). */
  readonly backends?: readonly ComputeBackend[];
  readonly kvCacheManager?: (context: EngineBuildContext) => KvCacheManager;
  readonly scheduler?: (context: EngineBuildContext, kv: KvCacheManager) => Scheduler;
  readonly sampler?: Sampler;
  /** Custom processors; rows of requests they apply to are sampled on the host. */
  readonly logitsProcessors?: readonly LogitsProcessor[];
  /** A tokenizer, or null for token-id prompts only; by default loaded from the model directory. */
  readonly tokenizer?: Tokenizer | null;
  readonly configure?: (container: DependencyContainer) => void;
}
