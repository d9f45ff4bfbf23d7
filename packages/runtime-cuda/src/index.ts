export { type CudaBackendOptions, createCudaBackend } from './cuda-backend.js';
export { CudaKvStorage } from './cuda-kv-storage.js';
export { CudaModelExecutor } from './cuda-model-executor.js';
export { type CeilingOptions, type DeviceCeilings, measureDeviceCeilings } from './device-ceilings.js';
export type { NativeExecutorInfo } from './native-addon.js';
export { ropeInverseFrequencies } from './rope-frequencies.js';
export { SamplingPlanner } from './sampling-plan.js';
export { LAYER_FIELDS, type WeightLayout, type WeightRegion, weightLayout } from './weight-layout.js';
