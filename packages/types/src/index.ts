export {
  type BackendCapabilities,
  DEVICE_SAMPLING_OPS,
  type DeviceSamplingOp,
  type LoadFormat,
  MAX_DEVICE_TOP_LOGPROBS,
  type ModelInfo,
  type ModelLoadSpec,
  unavailableCapabilities,
} from './backend.js';
export type { ChatMessage, ChatTool, ChatToolCall } from './chat.js';
export { FerrumError, type FerrumErrorCode, isFerrumError } from './errors.js';
export {
  type ForwardBatch,
  type ForwardResult,
  numOutputTokensOf,
  type RowSampling,
} from './forward-batch.js';
export type {
  EngineStatus,
  FinishReason,
  GenerateChunk,
  GenerateRequest,
  PromptInput,
  TokenLogprob,
  Usage,
} from './generate.js';
export type { DType, ModelArchitecture, ModelConfig, RopeConfig } from './model-config.js';
export {
  DEFAULT_SAMPLING_PARAMS,
  hasPenalties,
  isGreedy,
  resolveSamplingParams,
  type SamplingParams,
} from './sampling-params.js';
export { seededRandom } from './seeded-random.js';
