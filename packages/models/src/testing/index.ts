/**
 * Test kit for runtime authors (`@ferrum/models/testing`): tiny checkpoints' transformers goldens and
 * hand-built ForwardBatches, so every ComputeBackend is checked against the same references.
 */
export { buildBatch, greedyRow, maxAbsDiff, range, type SeqStep, valueRange } from './batch-builder.js';
export { type Golden, readGolden, type TinyModel, tinyModelsIn } from './golden-fixtures.js';
