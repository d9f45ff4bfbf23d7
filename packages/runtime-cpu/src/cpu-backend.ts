import { cpus, freemem, totalmem } from 'node:os';
import type { ComputeBackend } from '@ferrum/interfaces';
import {
  type BackendCapabilities,
  FerrumError,
  type ModelLoadSpec,
  unavailableCapabilities,
} from '@ferrum/types';
import { CpuModelExecutor } from './cpu-model-executor.js';
import { type CpuSimdPath, loadNativeAddon, type NativeAddon } from './native-addon.js';
import { native } from './native-error.js';
import { nativeLoadOptions } from './native-load-options.js';

/** Options of {@link createCpuBackend}. */
export interface CpuBackendOptions {
  /** Threads per model (the stepping thread included); 0 or absent: every usable CPU. `ModelLoadSpec.numThreads` wins. */
  readonly numThreads?: number;
  /**
   * Force a SIMD path (tests, comparisons); absent: the best this CPU runs for the compute dtype (`ModelLoadSpec.dtype`
   * 'bf16': a path with bf16 products where there is one). `backendOptions.simd` wins.
   */
  readonly simd?: CpuSimdPath;
}

/** Preference among backends: below any accelerator, above nothing. */
const CPU_SCORE = 10;
/** Not a hard limit on CPU; what the engine may plan for by default. */
const CPU_MAX_BATCH_TOKENS = 8192;

/**
 * The reference CPU backend: f32 activations over bf16/f16/f32 weights, SIMD kernels chosen at run time,
 * a thread pool per model; with the compute dtype bf16, bf16 weights are multiplied as bf16 products on AMX or
 * AVX-512 BF16 where the CPU has them. Creating it never loads anything; a missing native build shows in `probe()`.
 */
export function createCpuBackend(options: CpuBackendOptions = {}): ComputeBackend {
  const numThreads = options.numThreads ?? 0;
  if (!Number.isInteger(numThreads) || numThreads < 0) {
    throw new FerrumError('invalid_argument', `numThreads must be a non-negative integer, got ${numThreads}`);
  }
  return {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: async () => probeCpu(numThreads),
    loadModel: async (spec: ModelLoadSpec) => {
      const addon = requireAddon();
      const loadOptions = await nativeLoadOptions(spec, { numThreads, simd: options.simd ?? '' });
      const model = await native(() => addon.loadModel(loadOptions));
      const description = model.describe();
      return new CpuModelExecutor(model, {
        config: spec.config,
        weightDtype: weightDtypeOf(loadOptions.tensors),
        numKvSlots: description.numSlots,
        numHostKvSlots: description.numHostSlots,
        maxBatchTokens: spec.maxBatchTokens,
        maxBatchSeqs: spec.maxBatchSeqs,
        backend: 'cpu',
      });
    },
  };
}

function probeCpu(numThreads: number): BackendCapabilities {
  const base = {
    totalMemoryBytes: totalmem(),
    freeMemoryBytes: freemem(),
    maxBatchTokens: CPU_MAX_BATCH_TOKENS,
    cudaGraphs: false,
    pagedAttention: true,
    tensorParallelSize: 1,
  };
  const load = loadNativeAddon();
  if (!load.ok) return unavailableCapabilities(load.reason, 'cpu');
  try {
    const probe = load.addon.probe();
    const threads = numThreads > 0 ? numThreads : probe.numCpus;
    const model = cpus()[0]?.model.trim() || 'CPU';
    const paths = probe.bf16Simd === probe.simd ? probe.simd : `${probe.simd}; bf16 ${probe.bf16Simd}`;
    return {
      ...base,
      available: true,
      device: `${model} (${paths}, ${threads} threads)`,
      score: CPU_SCORE,
      dtypes: ['f32', 'bf16', 'f16'],
      deviceSampling: ['greedy'],
      previousTokens: true,
      features: [`simd:${probe.simd}`, ...probe.features],
      backendOptions: {
        simd: probe.simd,
        bf16Simd: probe.bf16Simd,
        usableSimd: probe.usableSimd,
        numThreads: threads,
      },
    };
  } catch (error) {
    return unavailableCapabilities(`native probe failed: ${(error as Error).message}`, 'cpu');
  }
}

function requireAddon(): NativeAddon {
  const load = loadNativeAddon();
  if (!load.ok) throw new FerrumError('backend_unavailable', load.reason);
  return load.addon;
}

function weightDtypeOf(tensors: readonly { name: string; dtype: ModelLoadSpec['config']['dtype'] }[]) {
  // The dtype the projections are held in (norms may differ in a checkpoint; they are tiny).
  return (tensors.find((tensor) => tensor.name.endsWith('q_proj.weight')) ?? tensors[0]).dtype;
}
