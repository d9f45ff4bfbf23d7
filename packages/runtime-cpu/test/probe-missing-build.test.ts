import { FerrumError } from '@ferrum/types';
import { describe, expect, it, vi } from 'vitest';

// Simulates a checkout where the native build never ran.
vi.mock('../src/native-addon.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/native-addon.js')>();
  return { ...original, loadNativeAddon: () => ({ ok: false, reason: original.NATIVE_BUILD_MISSING }) };
});

const { createCpuBackend } = await import('../src/index.js');

describe('without the native build', () => {
  it('probe() reports unavailable with the build command, without throwing', async () => {
    const capabilities = await createCpuBackend().probe();
    expect(capabilities.available).toBe(false);
    expect(capabilities.score).toBe(0);
    expect(capabilities.reason).toBe('native build missing: run pnpm --filter @ferrum/runtime-cpu build');
  });

  it('loadModel() fails with backend_unavailable', async () => {
    const error = await createCpuBackend()
      .loadModel({} as never)
      .catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(FerrumError);
    expect((error as FerrumError).code).toBe('backend_unavailable');
  });
});
