export { type CpuBackendOptions, createCpuBackend } from './cpu-backend.js';
export { CpuModelExecutor } from './cpu-model-executor.js';
export { defaultHostSlots, defaultKvSlots, kvBytesPerToken } from './kv-slots.js';
export {
  BF16_PRODUCT_PATHS,
  CPU_SIMD_PATHS,
  type CpuSimdPath,
  type NativeModelDescription,
} from './native-addon.js';
export { isDeviceGreedy } from './row-modes.js';
