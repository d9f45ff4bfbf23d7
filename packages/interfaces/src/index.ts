export {
  COMPUTE_BACKENDS,
  type ComputeBackend,
  type KvStorage,
  type ModelExecutor,
} from './compute-backend.js';
export { INFERENCE_ENGINE, type InferenceEngine } from './inference-engine.js';
export { defineToken, type InjectionToken, type SpecificationVersion } from './injection-token.js';
export {
  KV_CACHE_MANAGER,
  type KvCacheManager,
  type KvCacheStats,
  type KvSwapPlan,
} from './kv-cache-manager.js';
export {
  LOGITS_PROCESSORS,
  type LogitsContext,
  type LogitsProcessor,
  SAMPLER,
  type Sampler,
  type SamplerOutput,
  type SamplerRow,
} from './sampler.js';
export {
  SCHEDULER,
  type ScheduledStep,
  type Scheduler,
  type SchedulerStats,
  type SequenceRequest,
  type SequenceState,
  type SequenceUpdate,
  type StepPlaceholders,
} from './scheduler.js';
export { type ChatTemplateOptions, type DecodeStream, TOKENIZER, type Tokenizer } from './tokenizer.js';
