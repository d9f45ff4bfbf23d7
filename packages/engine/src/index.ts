export { AsyncChannel } from './async-channel.js';
export { createEngine, probeBackends } from './create-engine.js';
export { defaultBackends } from './default-backends.js';
export type { DeviceChoice, EngineMetrics, EngineOptions, Histogram } from './engine-options.js';
export type { EngineBuildContext, EngineOverrides } from './engine-overrides.js';
export { FerrumEngine } from './ferrum-engine.js';
export { type WarmUpOptions, type WarmUpTarget, warmUp } from './warm-up.js';
