import { FerrumError } from '@ferrum/types';
import { loadNativeAddon } from './native-addon.js';

/** The two roofline ceilings of a GPU, measured on it (METHOD.md: floors come from measured rates). */
export interface DeviceCeilings {
  /** Device-to-device copy rate, bytes read plus bytes written per second. */
  readonly bandwidthBytesPerSecond: number;
  /** Dense bf16 product rate through cuBLASLt (f32 accumulate), FLOP per second. */
  readonly gemmFlopsPerSecond: number;
}

/** Sizes of the two measurements; defaults: a 4 GB copy and an 8192³ product, 20 timed repetitions each. */
export interface CeilingOptions {
  readonly device?: number;
  readonly copyBytes?: number;
  readonly gemmSize?: number;
  readonly iterations?: number;
}

/**
 * Measure the copy bandwidth and the bf16 GEMM rate of a CUDA device (median of timed repetitions on random
 * data). Blocks the calling thread for about a second. Throws `backend_unavailable` without a native build.
 */
export function measureDeviceCeilings(options: CeilingOptions = {}): DeviceCeilings {
  const load = loadNativeAddon();
  if (load.addon === null) throw new FerrumError('backend_unavailable', load.reason);
  const device = options.device ?? 0;
  const iterations = options.iterations ?? 20;
  const size = options.gemmSize ?? 8192;
  return {
    bandwidthBytesPerSecond: load.addon.measureBandwidth(options.copyBytes ?? 4e9, iterations, device),
    gemmFlopsPerSecond: load.addon.measureGemmRate(size, size, size, iterations, device),
  };
}
