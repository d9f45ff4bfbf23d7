/**
 * Test kit for runtime authors (`@ferrum/models/testing`): tiny checkpoints' transformers goldens,
 * hand-built ForwardBatches, and the executor conformance suite every ComputeBackend runs against them.
 */
export { buildBatch, greedyRow, maxAbsDiff, range, type SeqStep, valueRange } from './batch-builder.js';
export {
  type ConformanceTolerances,
  describeExecutorConformance,
  type ExecutorConformanceOptions,
  type Tolerance,
} from './executor-conformance.js';
export { type Golden, readGolden, type TinyModel, tinyModelsIn } from './golden-fixtures.js';
