import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { loadNativeAddon } from '../src/native-addon.js';

const addon = loadNativeAddon();

describe('createCpuBackend', () => {
  it('names itself and speaks interface v1', () => {
    const backend = createCpuBackend();
    expect(backend.name).toBe('cpu');
    expect(backend.specificationVersion).toBe('v1');
  });

  it('rejects a negative thread count', () => {
    expect(() => createCpuBackend({ numThreads: -1 })).toThrow(/numThreads/);
  });

  it.skipIf(!addon.ok)('probes the CPU: SIMD path, features, dtypes and greedy sampling', async () => {
    const capabilities = await createCpuBackend({ numThreads: 2 }).probe();
    const native = addon.ok ? addon.addon.probe() : undefined;
    expect(capabilities.available).toBe(true);
    const bf16 = native!.bf16Simd === native!.simd ? '' : `; bf16 ${native!.bf16Simd}`;
    expect(capabilities.device).toContain(`(${native!.simd}${bf16}, 2 threads)`);
    expect(capabilities.backendOptions).toMatchObject({ simd: native!.simd, bf16Simd: native!.bf16Simd });
    expect(capabilities.features).toContain(`simd:${native!.simd}`);
    expect(capabilities.dtypes).toEqual(expect.arrayContaining(['f32', 'bf16', 'f16']));
    expect(capabilities.deviceSampling).toEqual(['greedy']);
    expect(capabilities.score).toBeGreaterThan(0);
    expect(native!.usableSimd.at(-1)).toBe('scalar');
  });
});
