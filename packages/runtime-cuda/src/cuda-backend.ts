import type { ComputeBackend } from '@ferrum/interfaces';
import {
  type BackendCapabilities,
  DEVICE_SAMPLING_OPS,
  FerrumError,
  type ModelLoadSpec,
  unavailableCapabilities,
} from '@ferrum/types';
import { CudaModelExecutor } from './cuda-model-executor.js';
import { loadNativeAddon, type NativeAddon, type NativeProbe } from './native-addon.js';
import { native } from './native-error.js';
import { nativeLoadSpec } from './native-load-spec.js';

/** Options of {@link createCudaBackend}. */
export interface CudaBackendOptions {
  /** CUDA device index (default 0); `ModelLoadSpec.backendOptions.device` wins. */
  readonly device?: number;
}

/** Preference among backends: above Metal and CPU. */
const CUDA_SCORE = 100;
/** What the engine may plan for by default; the runtime accepts up to 65,535 tokens a step. */
const CUDA_MAX_BATCH_TOKENS = 16_384;

/**
 * The CUDA backend: bf16 weights and activations, cuBLASLt GEMMs, paged attention over a token pool and
 * device-side sampling. Creating it loads nothing; a missing build, driver or GPU shows in `probe()`.
 */
export function createCudaBackend(options: CudaBackendOptions = {}): ComputeBackend {
  const device = options.device ?? 0;
  if (!Number.isInteger(device) || device < 0) {
    throw new FerrumError('invalid_argument', `device must be a non-negative integer, got ${device}`);
  }
  return {
    specificationVersion: 'v1',
    name: 'cuda',
    probe: () => probeCuda(),
    loadModel: async (spec: ModelLoadSpec) => {
      const addon = requireAddon();
      const loadSpec = await nativeLoadSpec(spec, device);
      const executor = await native(() => addon.loadModel(loadSpec));
      const info = executor.info();
      return new CudaModelExecutor(executor, {
        config: spec.config,
        weightDtype: 'bf16',
        numKvSlots: info.numSlots,
        numHostKvSlots: info.numHostSlots,
        maxBatchTokens: spec.maxBatchTokens,
        maxBatchSeqs: spec.maxBatchSeqs,
        backend: 'cuda',
      });
    },
  };
}

async function probeCuda(): Promise<BackendCapabilities> {
  const load = loadNativeAddon();
  if (load.addon === null) return unavailable(load.reason);
  let probe: NativeProbe;
  try {
    probe = await load.addon.probe();
  } catch (error) {
    return unavailable(`native probe failed: ${(error as Error).message}`);
  }
  if (!probe.available) return unavailable(probe.reason);
  const gib = (probe.totalMemoryBytes / 2 ** 30).toFixed(0);
  const sm = `sm_${probe.computeCapability.replace('.', '')}`;
  return {
    available: true,
    device: `${probe.name} (${sm}, ${gib} GiB)`,
    score: CUDA_SCORE,
    dtypes: ['bf16', 'f16', 'f32'],
    totalMemoryBytes: probe.totalMemoryBytes,
    freeMemoryBytes: probe.freeMemoryBytes,
    maxBatchTokens: CUDA_MAX_BATCH_TOKENS,
    deviceSampling: DEVICE_SAMPLING_OPS,
    // Decode steps replay CUDA graphs unless the model is loaded with enforceEager.
    cudaGraphs: true,
    pagedAttention: true,
    tensorParallelSize: 1,
    previousTokens: true,
    previousTokenPenalties: true,
    features: [sm, 'cublaslt'],
    backendOptions: {
      computeCapability: probe.computeCapability,
      multiProcessorCount: probe.multiProcessorCount,
      builtArchitectures: probe.builtArchitectures,
      driverVersion: probe.driverVersion,
      runtimeVersion: probe.runtimeVersion,
    },
  };
}

function unavailable(reason: string): BackendCapabilities {
  return unavailableCapabilities(`unavailable: ${reason}`, 'cuda');
}

function requireAddon(): NativeAddon {
  const load = loadNativeAddon();
  if (load.addon === null) throw new FerrumError('backend_unavailable', `runtime-cuda: ${load.reason}`);
  return load.addon;
}
